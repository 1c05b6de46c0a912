"""The registry view: families, versions, the promotion history, aliases and retirements; its
tables (schema), how each Family event changes them (handlers) and the reads of families and
their pages (reads)."""
