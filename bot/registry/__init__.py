"""The OCI Distribution API of any container registry: tags, manifests, image labels.

GitHub does not let an installation token read the Packages REST API, so every tag → digest
lookup goes to the image's registry itself (GHCR, Docker Hub, ECR, GAR, Harbor, GHES).

It imports only `bot.domain` (image references) and its HTTP client; the runtime wires it.
"""
