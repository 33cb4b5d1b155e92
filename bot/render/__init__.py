"""The rendering edge: what a Kustomize overlay or a Helm chart deploys, rendered by a real
kustomize and a real Helm.

A file is only part of what deploys: overlays build on bases, components and patches; a chart's
templates, helpers, defaults and subcharts make what its values file asks for. This package
owns finding the tools to run (`tool.py`), working out what one render renders and which files
of a tree it reads (`targets.py`, `inputs.py`, `charts.py`, `reads.py`, pure), running it on a
private copy of those files, bounded and without network (`build.py`), and reading the
container images of every workload and the rendered resources out of its output
(`workloads.py`, `diff.py`, pure). It imports only the standard library, cachetools,
ruamel.yaml and `bot.yamlread`; reading the files from GitHub is the caller's job
(`bot.promotion.builds`).
"""
