"""The run search language: grammar (lark), field catalogue, compiler to SQL, the search view's
tables, and the search read itself (ledger.views.search.reads)."""
