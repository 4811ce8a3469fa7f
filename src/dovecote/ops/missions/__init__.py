"""Missions: posting on a chain, blocks and receipt import, the gesture passphrase."""
