"""What a registry refused, in one line that says which setting fixes it."""

from __future__ import annotations

from bot.registry.names import Repository

AUTH_SETTING = "CONVEYOR_REGISTRY_AUTH_FILE"
ENDPOINT_SETTING = "CONVEYOR_REGISTRY_ENDPOINTS"


class RegistryError(Exception):
    """A registry lookup that could not be answered. `message` never holds a credential."""

    def __init__(self, repository: Repository, status: int | None, message: str) -> None:
        super().__init__(message)
        self.repository = repository
        self.status = status
        self.message = message

    def __str__(self) -> str:
        return self.message


def refusal(repository: Repository, status: int, *, has_credential: bool,
            detail: str = "") -> RegistryError:
    where = f"registry {repository.host} answered {status} for {repository.name}"
    if status in (401, 403):
        if has_credential:
            fix = (f"the credentials for {repository.host} in {AUTH_SETTING} were refused "
                   "or may not read this image")
        else:
            fix = f"set {AUTH_SETTING}"
    elif status == 404:
        fix = "check the service's image name in the policy"
    elif status == 429 or status >= 500:
        fix = "retried later by the resync"
    else:
        fix = detail or "unexpected answer"
    return RegistryError(repository, status, f"{where}: {fix}")


def unreachable(repository: Repository, reason: str) -> RegistryError:
    return RegistryError(
        repository, None,
        f"registry {repository.host} {reason} for {repository.name}: check the network or "
        f"{ENDPOINT_SETTING}")


def invalid(repository: Repository, reason: str) -> RegistryError:
    return RegistryError(repository, None,
                         f"registry {repository.host} sent {reason} for {repository.name}")
