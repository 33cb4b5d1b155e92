"""The pure checks of `conveyor/config-check`: YAML documents with lines, Kubernetes schemas,
kustomizations, Helm values, Argo CD sources, the policy and image pins, and the check run's
summary. Reading the files at a commit and posting the check run is ``bot.promotion.configcheck``.

Pure: it imports only `bot.domain`, `bot.manifests`, `bot.yamlread` and `bot.names`.
"""
