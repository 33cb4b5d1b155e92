"""Sigstore verification of GitHub artifact attestations: the trusted roots (Sigstore's
public-good instance and GitHub's own, kept fresh through their TUF repositories, or a file of
roots), and each bundle verified into a `BundleVerdict` of `bot.domain.attestation`.

An edge beside `github/` and `registry/`: it imports `bot.domain` and the Sigstore libraries,
and reaches the network only for the TUF repositories. Which bundles to verify is asked of
GitHub by `promotion/`; what a verified bundle is worth to a service is
`bot.domain.attestation.judge`."""
