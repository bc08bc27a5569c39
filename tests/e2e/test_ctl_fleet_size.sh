#!/usr/bin/env bash
# test_ctl_fleet_size.sh - the body bound of PUT /v1/fleet is the fleet file's
# own (FLEET_MAX_FILE, 64 MiB, as fleet.h and docs/fleet-file.md promise), not
# the general request bound (1 MiB): a generated fleet of a little over 1 MiB
# (the demo fleet plus a site of many nodes) is accepted and served; one over
# 64 MiB is refused with 413 naming the bound; and other routes keep 1 MiB.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"
FLEET="$SL_ROOT/examples/demo-fleet.yaml"
MIB=$((1 << 20))

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
ADMIN=$(cat "$DATA/admin.token")
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$FLEET" --simulate; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi

# ---- a fleet file over 1 MiB: the demo fleet with a site of N more nodes ----
# Long names keep N (and the daemon's work) small: about 105 bytes a node.
N=12000
{
	sed -n '1,/^sites:/p' "$FLEET"
	printf '  - name: bulk-a\n    region: cn-west\n    fabrics:\n      - name: bulk-ib\n'
	printf '        kind: infiniband\n        gbps: 400\n        leaves:\n'
	awk -v n="$N" 'BEGIN {
		for (i = 1; i <= n; i++) {
			if ((i - 1) % 1000 == 0)
				printf "          - name: bulk-leaf-%02d\n            nodes:\n", (i - 1) / 1000 + 1
			printf "              - {name: bulk-a-node-with-a-long-name-for-size-%06d, type: pcie-l40s-8, price_hint: 450}\n", i
		}
	}'
	sed -n '/^sites:/,$p' "$FLEET" | tail -n +2
} >"$TMP/big.yaml"
size=$(stat -c %s "$TMP/big.yaml")
[ "$size" -gt "$MIB" ] && ok "the generated fleet file is over 1 MiB ($size bytes)" ||
	bad "the generated fleet file is over 1 MiB" "$size bytes"
out=$("$SUANLI" fleet check "$TMP/big.yaml" 2>&1)
expect_eq "and a valid fleet (suanli fleet check)" "$?" 0
r=$(api "$ADMIN" PUT /v1/fleet "@$TMP/big.yaml" -H 'Content-Type: application/yaml')
expect_eq "PUT /v1/fleet of a fleet file over 1 MiB: 200" "$(status_of "$r")" 200
expect_eq "the new fleet has the demo's 76 nodes and $N more" "$(body_of "$r" | jq .nodes)" $((76 + N))
r=$(api "$ADMIN" GET "/v1/nodes/bulk-a-node-with-a-long-name-for-size-$(printf %06d $N)")
expect_eq "its last node is served" "$(status_of "$r")" 200

# ---- over 64 MiB: refused at once, saying the bound ----
{
	cat "$FLEET"
	yes '# padding to go past the bound on a fleet file' | head -c $((64 * MIB))
} >"$TMP/huge.yaml"
r=$(api "$ADMIN" PUT /v1/fleet "@$TMP/huge.yaml" -H 'Content-Type: application/yaml')
expect_eq "PUT /v1/fleet of a file over 64 MiB: 413" "$(status_of "$r")" 413
expect_eq "with the too_large code" "$(body_of "$r" | jq -r .error.code)" too_large
expect_match "naming the bound (64 MiB)" "$(body_of "$r" | jq -r .error.message)" \
	"larger than $((64 * MIB)) bytes"
rm -f "$TMP/huge.yaml"
r=$(api "$ADMIN" GET /v1/fleet)
expect_eq "the refused file changed nothing" "$(body_of "$r" | jq .nodes)" $((76 + N))

# ---- every other route keeps the general bound ----
head -c $((MIB + 1)) /dev/zero | tr '\0' ' ' >"$TMP/pad.json"
r=$(api "$ADMIN" POST /v1/tenants "@$TMP/pad.json")
expect_eq "a body over 1 MiB to POST /v1/tenants: 413" "$(status_of "$r")" 413
expect_match "naming the general bound" "$(body_of "$r" | jq -r .error.message)" "larger than $MIB bytes"

stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
finish
