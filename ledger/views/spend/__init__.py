"""The spend view: accounts and their audit trail."""
