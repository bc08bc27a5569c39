#!/usr/bin/env bash
# test_agent_pull.sh - a rank whose image is not on its node: while podman
# pulls it, the job's state says so (`ranks[].progress` in `job show`, from
# the agent's heartbeat), and the line goes away once the image is there and
# the command runs. Nothing is pulled from anywhere: a wrapper in front of
# podman plays the registry, holding the image "missing" until the test lets
# it arrive (the image itself is the cached local one, scripts/build-image.py).
# Skipped (exit 77) where containers cannot run: not root, no podman.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/netns_lib.sh"
. "$(dirname "$0")/agent_lib.sh"
FLEET="$SL_ROOT/tests/data/fleet/isolation.yaml"
N=iso-h100-01
SLOW=localhost/suanli/slowpull:1

ns_init
trap 'ag_containers_cleanup; ns_cleanup; rm -rf "$TMP"' EXIT
if ! ag_image base base-files bash coreutils dash findutils grep sed procps libc-bin python3; then
	echo "SKIP containers: $AG_IMAGE_WHY"
	exit 77
fi
IMG=$AG_IMAGE
AG_IMAGE=""
AG_ENGINE=podman
REAL=$(command -v podman)
MARK="$TMP/pulled"
mkdir -p "$TMP/bin"
# The "registry": SLOW does not exist until MARK does; a run of SLOW waits for
# MARK (the pull) and then runs the real image.
cat >"$TMP/bin/podman" <<SH
#!/bin/sh
case " \$* " in
*" image exists $SLOW "*) [ -e "$MARK" ]; exit \$? ;;
*" $SLOW "*)
	i=0
	while [ ! -e "$MARK" ] && [ \$i -lt 600 ]; do sleep 0.1; i=\$((i + 1)); done
	n=\$#
	while [ \$n -gt 0 ]; do
		a=\$1
		shift
		[ "\$a" = "$SLOW" ] && a="$IMG"
		set -- "\$@" "\$a"
		n=\$((n - 1))
	done ;;
esac
exec "$REAL" "\$@"
SH
chmod +x "$TMP/bin/podman"
export PATH="$TMP/bin:$PATH"

ns_create ctl 1 && ns_create h1 2 || die "hosts are created"
ag_controller "$TMP/data" "$FLEET" --heartbeat 1 --unreachable-after 5 --down-after 60 ||
	die "controller starts"
ag_start "$N" h1 "$(ag_join_token)"
wait_until 30 node_is "$N" ready || die "the agent is ready"
sl image add slow --ref "$SLOW" >/dev/null || die "image add"
sl tenant create acme >/dev/null || die "tenant"
L=$(body_of "$(api "$ADMIN" POST /v1/leases '{"tenant":"acme","gpus":8,"models":["h100-sxm"]}')" | jq -r .id)
J=$(sl job run --lease "$L" --image slow --env "NS_TAG=$NS_TAG" --json -- sh -c 'echo pulled-and-running; sleep 60' |
	jq -r .id)
expect_match "a job on an image its node lacks" "$J" '^job-'
pulling() { [ "$(job_field "$J" '.ranks[0].progress // empty')" = "pulling image $SLOW (it is not on this node yet)" ]; }
wait_until 30 pulling
expect_eq "while podman pulls, the rank's state says so" "$(job_field "$J" '.ranks[0].progress // empty')" \
	"pulling image $SLOW (it is not on this node yet)"
expect_match "... and job show prints it" "$(sl job show "$J")" "Rank 0: +pulling image $SLOW"
touch "$MARK"
runs() { sl job logs "$J" 2>/dev/null | grep -q pulled-and-running; }
wait_until 60 runs
runs && ok "once the image is there the command runs" || bad "the command runs" "$(sl job logs "$J" 2>&1 | tail -3)"
gone() { [ -z "$(job_field "$J" '.ranks[0].progress // empty')" ]; }
wait_until 20 gone
expect_eq "... and the progress line is gone" "$(job_field "$J" '.ranks[0].progress // empty')" ""
sl job cancel "$J" >/dev/null
wait_until 30 job_is "$J" cancelled
expect_eq "cancel ends it" "$(job_field "$J" .state)" cancelled
finish
