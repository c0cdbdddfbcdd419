#!/usr/bin/env bash
# output_leftover_test.sh GRADSYNC: a run that replaces an --out folder whose files the user
# cannot delete (a read-only subfolder) puts its outputs in place and says where the old files
# stay, instead of leaving them silently in a hidden folder beside --out. Run as an unprivileged
# user (root deletes anything): under root, as nobody through su.
set -euo pipefail
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
chmod 777 "$tmp"
# The user runs a copy from the temporary folder: the checkout may be where nobody can read it
# (the zoo models are built in).
cp "$1" "$tmp/gradsync" && chmod 755 "$tmp/gradsync"
bin=$tmp/gradsync
as_user() {
  if [[ $(id -u) == 0 ]]; then
    command -v su >/dev/null || fail "su is needed to run as an unprivileged user"
    su nobody -s /bin/bash -c "$1"
  else
    bash -c "$1"
  fi
}
run="cd '$tmp' && '$bin' simulate --strategy ddp --model resnet18 --gpus 2 --iterations 2 --warmup 1 --out '$tmp/o'"
as_user "$run >/dev/null 2>'$tmp/first.err'" || { cat "$tmp/first.err"; fail "the first run"; }
# A subfolder the user cannot write: its file cannot be removed.
as_user "mkdir '$tmp/o/keep' && touch '$tmp/o/keep/f' && chmod 555 '$tmp/o/keep'"
as_user "$run >/dev/null 2>'$tmp/second.err'" || { cat "$tmp/second.err"; fail "the second run"; }
grep -q "^note: --out $tmp/o: the folder it replaced could not be removed whole (Permission denied); its files are in $tmp/\.o\.gradsync-tmp-.*: remove it by hand$" "$tmp/second.err" \
  || { cat "$tmp/second.err"; fail "no note naming the leftover folder"; }
[[ -f "$tmp/o/result.json" && ! -e "$tmp/o/keep" ]] || fail "the new outputs are not in place"
echo "a replaced folder that cannot be removed whole is named"
