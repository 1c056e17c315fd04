#!/usr/bin/env bash
# Turns an installed tree (make install DESTDIR=ROOT PREFIX=/usr) into a
# Debian package in OUTDIR, with dpkg-deb: control from deploy/debian, the
# copyright and a changelog in /usr/share/doc/edgenf, md5sums, and the
# maintainer scripts that register the systemd unit (enabled and started on
# install, as Debian does for services; stopped on removal).
# Usage: scripts/mkdeb.sh ROOT VERSION OUTDIR
set -euo pipefail
root=$1 version=$2 out=$3
cd "$(dirname "$0")/.."
arch=$(dpkg --print-architecture)
doc=$root/usr/share/doc/edgenf
install -d -m 755 "$doc" "$root/DEBIAN"
install -m 644 deploy/debian/copyright "$doc/copyright"
install -D -m 644 deploy/debian/lintian-overrides "$root/usr/share/lintian/overrides/edgenf"
# A reproducible changelog: the commit's date, not the build's.
date=$(git log -1 --format=%aD 2>/dev/null || date -R)
printf 'edgenf (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- edgenf maintainers <maintainers@edgenf.invalid>  %s\n' \
	"$version" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$date" | gzip -9n >"$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SIZE@/$size/" deploy/debian/control >"$root/DEBIAN/control"
for s in postinst prerm postrm; do
	install -m 755 "deploy/debian/$s" "$root/DEBIAN/$s"
done
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
mkdir -p "$out"
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s) \
	dpkg-deb --root-owner-group -Zxz --build "$root" "$out/edgenf_${version}_${arch}.deb"
