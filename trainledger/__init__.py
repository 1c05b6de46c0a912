"""What both sides of the wire share: the generated protocol (trainledger.v1, from proto/ by
scripts/generate_proto.py), the one cost rule (pricing), how Struct numbers read back (structs)
and how document keys read in field names (fields). The hand-written modules use the standard
library only, so the ledger, the server and the client all import them."""
