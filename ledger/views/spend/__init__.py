"""The spend view: accounts and their audit trail (every reservation, refusal, charge and
adjustment); its tables (schema), how each Account event changes them (handlers: SpendView) and
the reads of accounts, audit trails, holds and the account tree (reads)."""
