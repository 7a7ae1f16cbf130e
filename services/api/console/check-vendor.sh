#!/usr/bin/env bash
# Holds the console's vendored files to package-lock.json: fetches the pinned three.js tarball
# with `npm pack`, checks it against the lock's integrity hash, and compares every file under
# vendor/three/ byte for byte with the same path in the package. Needs npm and the registry.
set -euo pipefail
cd "$(dirname "$0")"

lock_field() { # field of node_modules/three in package-lock.json
  node -e 'const l = require("./package-lock.json"); process.stdout.write(l.packages["node_modules/three"][process.argv[1]])' "$1"
}
version=$(lock_field version)
integrity=$(lock_field integrity)
declared=$(node -e 'process.stdout.write(require("./package.json").dependencies.three)')
if [ "$declared" != "$version" ]; then
  echo "check-vendor: package.json pins three $declared but package-lock.json has $version" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tarball=$(cd "$work" && npm pack --silent "three@$version" 2>"$work/npm.err" | tail -n 1) || true
if [ -z "$tarball" ] || [ ! -f "$work/$tarball" ]; then
  echo "check-vendor: npm pack three@$version failed (is the npm registry reachable?):" >&2
  cat "$work/npm.err" >&2
  exit 1
fi
actual="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "check-vendor: three@$version tarball is $actual, package-lock.json says $integrity" >&2
  exit 1
fi
tar -xzf "$work/$tarball" -C "$work"

failed=0
count=0
while IFS= read -r -d '' file; do
  relative=${file#vendor/three/}
  count=$((count + 1))
  if ! cmp -s "$file" "$work/package/$relative"; then
    echo "check-vendor: $file differs from $relative in three@$version" >&2
    failed=1
  fi
done < <(find vendor/three -type f -print0)
if [ "$count" -eq 0 ]; then
  echo "check-vendor: nothing under vendor/three" >&2
  exit 1
fi
[ "$failed" -eq 0 ] || exit 1
echo "check-vendor: $count files under vendor/three match three@$version"
