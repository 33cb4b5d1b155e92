"""The rendering edge: what a Kustomize overlay deploys, built by a real kustomize.

A file is only part of what deploys: overlays build on bases, components and patches. This
package owns finding the kustomize to run (`tool.py`), working out which files of a tree one
build reads (`inputs.py`, pure), running the build on a private copy of those files, bounded
and without network (`build.py`), and reading the container images of every workload out of
its output (`workloads.py`, pure). It imports only the standard library, cachetools,
ruamel.yaml and `bot.yamlread`; reading the files from GitHub is the caller's job
(`bot.promotion.builds`).
"""
