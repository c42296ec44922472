"""Mounts and ports of a service in ``docker-compose config`` output (short or long form)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any


@dataclass(frozen=True)
class Mount:
    source: str  # an absolute host path for a bind mount, else a volume name
    target: PurePosixPath
    read_only: bool

    @property
    def is_bind(self) -> bool:
        return self.source.startswith("/")


def mounts(service: dict[str, Any]) -> list[Mount]:
    result = []
    for volume in service.get("volumes", []):
        if isinstance(volume, str):
            source, target, *rest = volume.split(":")
            result.append(Mount(source, PurePosixPath(target), "ro" in (rest[0].split(",") if rest else [])))
        else:
            result.append(
                Mount(volume["source"], PurePosixPath(volume["target"]), bool(volume.get("read_only")))
            )
    return result


def bind_mounts(service: dict[str, Any]) -> list[Mount]:
    return [mount for mount in mounts(service) if mount.is_bind]


def resolve_in_container(path: PurePosixPath, binds: list[Mount]) -> Path | None:
    """The host path that ``path`` inside the container comes from (deepest mount wins)."""
    best: Mount | None = None
    for mount in binds:
        inside = path == mount.target or mount.target in path.parents
        if inside and (best is None or len(mount.target.parts) > len(best.target.parts)):
            best = mount
    if best is None:
        return None
    return Path(best.source) / path.relative_to(best.target)


def published_ports(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """``(host ip, host port, container port)`` for each published port."""
    result = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            result.append((port.get("host_ip", ""), int(port["published"]), int(port["target"])))
        else:
            spec = str(port).split("/")[0]
            *host, container = spec.split(":")
            host_ip = host[0] if len(host) == 2 else ""
            host_port = int(host[-1]) if host else int(container)
            result.append((host_ip, host_port, int(container)))
    return result


def container_ports(service: dict[str, Any]) -> set[int]:
    """Ports the service listens on, as far as the compose file says: published, or a known image default."""
    ports = {container for _, _, container in published_ports(service)}
    ports.update(int(p) for p in service.get("expose", []))
    return ports
