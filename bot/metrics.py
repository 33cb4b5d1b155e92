"""Prometheus metrics, all prefixed `conveyor_`, in one registry per process."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.deliveries = deliveries_counter(self.registry)
        self.processing_seconds = Histogram(
            "conveyor_processing_seconds",
            "Time from accepting a delivery to finishing its work",
            ["event"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.github_requests = Counter(
            "conveyor_github_requests",
            "Requests made to the GitHub API by method and status",
            ["method", "status"],
            registry=self.registry,
        )
        self.registry_requests = Counter(
            "conveyor_registry_requests",
            "Requests made to container registries by host and status (none: no answer)",
            ["host", "status"],
            registry=self.registry,
        )
        self.rate_limit_remaining = Gauge(
            "conveyor_github_rate_limit_remaining",
            "Requests left in the current rate-limit window, per installation",
            ["installation"],
            registry=self.registry,
        )
        self.github_wait_seconds = Counter(
            "conveyor_github_wait_seconds",
            "Seconds requests waited before being sent: `rate_limited` (GitHub asked the "
            "installation to wait) or `pacing` (the content-creation budget)",
            ["reason"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "conveyor_queue_depth", "Deliveries waiting for a worker", registry=self.registry
        )
        self.handler_errors = Counter(
            "conveyor_handler_errors",
            "Handler failures by event",
            ["event"],
            registry=self.registry,
        )
        self.job_retries = Counter(
            "conveyor_job_retries",
            "Jobs run again after a transient failure (5xx, timeout, rate limit, a transient "
            "4xx), by event",
            ["event"],
            registry=self.registry,
        )
        self.jobs_given_up = Counter(
            "conveyor_jobs_given_up",
            "Jobs that still failed transiently after their last retry; the resync finishes "
            "their work",
            ["event"],
            registry=self.registry,
        )
        self.promotions = Counter(
            "conveyor_promotions",
            "Promotion pull requests by environment and action",
            ["environment", "action"],
            registry=self.registry,
        )
        self.gate_verdicts = Counter(
            "conveyor_gate_verdicts",
            "Gate evaluations by conclusion",
            ["conclusion"],
            registry=self.registry,
        )
        self.gate_enforced = Gauge(
            "conveyor_gate_enforced",
            "1 when the deployment repository's default branch requires conveyor/promotion-gate "
            "from Conveyor's app, 0 when GitHub does not enforce the gate there",
            ["repository"],
            registry=self.registry,
        )


def deliveries_counter(registry: CollectorRegistry) -> Counter:
    """Counted where deliveries are answered: the server, or the intake process of two."""
    return Counter("conveyor_deliveries", "Webhook deliveries by event and outcome",
                   ["event", "outcome"], registry=registry)
