"""GitHub's two Sigstore instances, played: the one that signs public repositories' artifact
attestations (Sigstore's public-good shape: a Fulcio-style certificate authority with a
certificate-transparency log, and a Rekor-style transparency log) and GitHub's own, which signs
private and internal repositories' attestations with a certificate authority and an RFC 3161
timestamp authority and writes no log entry.

Each instance makes its own keys when it is created, signs in-toto statements into Sigstore
bundles as `actions/attest` does, and publishes its trusted root in the format of Sigstore's
`trusted_root.json`. It imports nothing of the rest of the emulator.
"""
