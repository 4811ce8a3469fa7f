"""Letters and their ids, addresses, envelopes (own and foreign), token records, the closed vocabularies."""
