#!/usr/bin/env bash
# Makes the Debian base image every SatLab Dockerfile starts from (docker/Dockerfile: ARG BASE),
# when it is missing, from Debian packages with mmdebstrap: no container registry is needed.
# mmdebstrap reads the host's apt sources (/etc/apt/sources.list.d/debian.sources or
# /etc/apt/sources.list), so a machine that can `apt-get install` can make the image.
#
#   scripts/base-image.sh            make satlab/base:bookworm unless it exists
#   SATLAB_BASE_IMAGE=NAME:TAG ...   another name (then build with --build-arg BASE=NAME:TAG)
#
# Users with a registry skip this: `--build-arg BASE=debian:bookworm-slim` gives the same base.
set -euo pipefail
IMAGE="${SATLAB_BASE_IMAGE:-satlab/base:bookworm}"
SUITE="${SATLAB_BASE_SUITE:-bookworm}"
DOCKER="${DOCKER:-/usr/bin/docker}"

if "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "    base image $IMAGE present"
  exit 0
fi

# The host's sources, when they name the same suite; Debian's default mirror otherwise.
mirror=()
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
  if [ -s "$f" ] && grep -qw "$SUITE" "$f"; then mirror=("$f"); break; fi
done

echo "    building $IMAGE from Debian $SUITE (mmdebstrap, minbase${mirror:+, sources: ${mirror[0]}})"
# minbase: essential packages + apt. Apt's package lists are dropped (the Dockerfiles update first);
# no recommends, no docs or man pages (images stay small).
mmdebstrap --variant=minbase --quiet \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --aptopt='APT::Install-Recommends "false"' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/*' \
  "$SUITE" - "${mirror[@]}" \
  | "$DOCKER" import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$IMAGE" >/dev/null
echo "    $IMAGE: $("$DOCKER" image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
