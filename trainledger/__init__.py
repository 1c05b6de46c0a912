"""What both sides of the wire share: the generated protocol (trainledger.v1, from proto/ by
scripts/generate_proto.py), the one cost rule (pricing) and how Struct numbers read back
(structs). The two hand-written modules use the standard library only, so the ledger, the server
and the client all import them."""
