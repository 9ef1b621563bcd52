"""What the Compose mode costs on first use: the time to make the Debian base image and to
build the project's image with no cache, the time to build it again after a change to the
code, and how large each is, layer by layer.

It builds under names of its own (`retailmax-bench...`), so that the image `make up` and the
Compose tests build, and its layer cache, stay as they are; and removes them after. The
measurement runs under infra/docker/with-engine.sh, which starts a Docker engine if none
answers and stops it after, so a later `make up` still finds the native mode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from benchmarks.report import header
from infra import stack

BASE = "retailmax-bench/debian:bookworm-slim"
IMAGE, CHANGED = "retailmax-bench:cold", "retailmax-bench:changed"
# A file in the build context that no image needs: writing it changes the context as an
# edit to the code does, so only the layers from `COPY . .` on are built again.
CHANGE = stack.ROOT / ".image-benchmark-change"
# The Dockerfile's steps by the command that makes each layer (`docker history`).
LAYERS = {
    "system packages (JDK, PostgreSQL, Python)": "apt-get install",
    "Python packages": "pip install",
    "jars (Kafka, Debezium, Hudi, Hadoop, drivers)": "infra.native.jars",
    "the project's code and classes": "COPY dir:",
}


def _docker(*arguments: str) -> str:
    return subprocess.run(["docker", *arguments], capture_output=True, text=True, check=True).stdout


def _build(tag: str, *options: str) -> float:
    began = time.monotonic()
    subprocess.run(
        [
            "docker",
            "build",
            "-q",
            *options,
            "--build-arg",
            f"BASE_IMAGE={BASE}",
            "-t",
            tag,
            "-f",
            str(stack.ROOT / "infra" / "docker" / "Dockerfile"),
            str(stack.ROOT),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "DOCKER_BUILDKIT": "0"},
    )
    return round(time.monotonic() - began, 1)


def _size(image: str) -> int:
    return int(_docker("image", "inspect", "--format", "{{.Size}}", image))


def _layers() -> dict[str, int]:
    history = [
        line.split("\t", 1)
        for line in _docker(
            "history", "--no-trunc", "--format", "{{.Size}}\t{{.CreatedBy}}", "--human=false", IMAGE
        ).splitlines()
    ]
    return {
        name: sum(int(size) for size, created_by in history if marker in created_by)
        for name, marker in LAYERS.items()
    }


def _measure_with_engine() -> dict:
    subprocess.run(["docker", "rmi", "-f", IMAGE, CHANGED, BASE], capture_output=True)
    stack.stage_certificate_authorities()
    began = time.monotonic()
    said = stack.make_base_image(BASE)
    base_seconds = round(time.monotonic() - began, 1)
    try:
        cold = _build(IMAGE, "--no-cache")
        CHANGE.write_text(str(time.time()))
        try:
            after_change = _build(CHANGED)
        finally:
            CHANGE.unlink()
        return {
            "base_image": {
                "made_with": "debootstrap" if "debootstrap" in said else "docker pull",
                "seconds": base_seconds,
                "bytes": _size(BASE),
            },
            "cold_build_seconds": cold,
            "build_after_a_code_change_seconds": after_change,
            "image_bytes": _size(IMAGE),
            "layer_bytes": _layers(),
        }
    finally:
        subprocess.run(["docker", "rmi", "-f", IMAGE, CHANGED, BASE], capture_output=True)


def measure() -> dict:
    measured = subprocess.run(
        ["bash", str(stack.ROOT / "infra" / "docker" / "with-engine.sh"), sys.executable, "-m", __name__],
        cwd=stack.ROOT,
        capture_output=True,
        text=True,
    )
    if measured.returncode != 0:
        raise RuntimeError(f"the image benchmark failed:\n{measured.stdout[-2000:]}{measured.stderr[-4000:]}")
    return json.loads(measured.stdout.strip().splitlines()[-1])


def markdown(results: dict) -> str:
    base = results["base_image"]
    mib = 2**20
    lines = [
        *header("Compose images on first use", results),
        "| step | s |",
        "|---|---:|",
        f"| the Debian base image, by `{base['made_with']}` | {base['seconds']} |",
        f"| the project's image, no cache | {results['cold_build_seconds']} |",
        f"| the same after a change to the layers' or apps' code | "
        f"{results['build_after_a_code_change_seconds']} |",
        "",
        f"The image: **{results['image_bytes'] / mib:,.0f} MiB**, on a base of "
        f"{base['bytes'] / mib:,.0f} MiB:",
        "",
        "| layer | MiB |",
        "|---|---:|",
        *(f"| {name} | {size / mib:,.0f} |" for name, size in results["layer_bytes"].items()),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(json.dumps(_measure_with_engine()))
