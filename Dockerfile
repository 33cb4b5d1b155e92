# A small non-root image of Conveyor: `docker run IMAGE` serves webhooks; any other command of
# the CLI works too (`docker run --rm IMAGE sandbox`, `... check-config /work/conveyor.yml`).
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY conveyor_emulator ./conveyor_emulator
# every dependency has wheels for CPython 3.11 on Linux: no compiler needed. pip compiles the
# bytecode here, so the read-only runtime never writes any. The `redis` extra (a small pure
# Python client) lets the same image run alone or as replicas sharing CONVEYOR_REDIS_URL.
RUN python -m pip install --prefix=/install ".[redis]" \
 # the config check reads only the strict Kubernetes schemas: drop the other half (~54 MB)
 && find /install -path '*kubernetes-json-schema/v*-local' -type d -prune -exec rm -rf {} +

# kustomize builds the Kustomize overlays the gate judges (CONVEYOR_KUSTOMIZE): the release
# binary of kubernetes-sigs/kustomize, checked against the sha256 its release publishes
# (kustomize_v5.8.1_linux_amd64.tar.gz; pass KUSTOMIZE_SHA256 for another version or arch).
# v5.8 is the first that runs Helm 4 to inflate `helmCharts`.
FROM python:3.11-slim AS kustomize
ARG KUSTOMIZE_VERSION=v5.8.1
ARG KUSTOMIZE_ARCH=amd64
ARG KUSTOMIZE_SHA256=029a7f0f4e1932c52a0476cf02a0fd855c0bb85694b82c338fc648dcb53a819d
ADD https://github.com/kubernetes-sigs/kustomize/releases/download/kustomize%2F${KUSTOMIZE_VERSION}/kustomize_${KUSTOMIZE_VERSION}_linux_${KUSTOMIZE_ARCH}.tar.gz /tmp/kustomize.tar.gz
RUN echo "${KUSTOMIZE_SHA256}  /tmp/kustomize.tar.gz" | sha256sum -c - \
 && tar -xzf /tmp/kustomize.tar.gz -C /usr/local/bin kustomize && kustomize version

# Helm renders the charts the gate judges (CONVEYOR_HELM) and inflates Kustomize `helmCharts`:
# the release binary of helm/helm, checked against the sha256 its release publishes
# (helm-v4.3.0-linux-amd64.tar.gz; pass HELM_SHA256 for another version or arch).
FROM python:3.11-slim AS helm
ARG HELM_VERSION=v4.3.0
ARG HELM_ARCH=amd64
ARG HELM_SHA256=86584a54def73570558f66f5111cc53dfed56689637ae32c1201205d494f54fb
ADD https://get.helm.sh/helm-${HELM_VERSION}-linux-${HELM_ARCH}.tar.gz /tmp/helm.tar.gz
RUN echo "${HELM_SHA256}  /tmp/helm.tar.gz" | sha256sum -c - \
 && tar -xzf /tmp/helm.tar.gz -C /tmp linux-${HELM_ARCH}/helm \
 && install -m 0755 /tmp/linux-${HELM_ARCH}/helm /usr/local/bin/helm && helm version --short

FROM python:3.11-slim
LABEL org.opencontainers.image.title="conveyor" \
      org.opencontainers.image.description="GitOps promotions through pull requests (GitHub App)" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOST=0.0.0.0 PORT=3000
COPY --from=build /install /usr/local
COPY --from=kustomize /usr/local/bin/kustomize /usr/local/bin/kustomize
COPY --from=helm /usr/local/bin/helm /usr/local/bin/helm
RUN groupadd --system --gid 10001 conveyor \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin conveyor
WORKDIR /app
USER 10001:10001
EXPOSE 3000
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
  CMD ["python", "-c", "import os,urllib.request as u; u.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000'), timeout=2)"]
ENTRYPOINT ["python", "-m", "bot"]
CMD ["serve"]
