#!/usr/bin/env bash
# test_ctl_roles.sh - every route x every role against the permission table
# below (the contract's, kept here independently of the daemon's). The test
# fails if the daemon has a route this table lacks or the other way round, or
# if the roles differ. Each request is built to change nothing when allowed
# (an incomplete body or an unknown id), so allowed means "neither 401 nor
# 403 nor 405" and denied means exactly 403.
set -u
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctl_lib.sh"
DATA="$TMP/data"

# METHOD PATH ROLES(comma list or "none") BODY (as sent when allowed)
TABLE='GET /healthz none -
GET /metrics admin,operator,auditor -
GET /v1/catalog admin,operator,tenant-admin,tenant,auditor -
GET /v1/fleet admin,operator,tenant-admin,tenant,auditor -
PUT /v1/fleet admin,operator -
GET /v1/placement/history admin,operator -
POST /v1/plan admin,operator,tenant-admin,tenant {}
GET /v1/nodes admin,operator,tenant-admin,tenant,auditor -
GET /v1/nodes/{name} admin,operator,tenant-admin,tenant,auditor -
POST /v1/nodes/{name}/drain admin,operator {}
POST /v1/nodes/{name}/resume admin,operator {"x":1}
POST /v1/tenants admin,operator {}
GET /v1/tenants admin,operator,auditor -
GET /v1/tenants/{name} admin,operator,tenant-admin,tenant,auditor -
POST /v1/tokens admin,operator,tenant-admin {}
GET /v1/tokens admin,operator,tenant-admin,auditor -
DELETE /v1/tokens/{id} admin,operator,tenant-admin -
POST /v1/users admin,operator,tenant-admin {}
GET /v1/users admin,operator,tenant-admin,auditor -
DELETE /v1/users/{name} admin,operator,tenant-admin -
POST /v1/users/{name}/password admin,operator,tenant-admin,tenant,auditor {}
POST /v1/sessions none {}
GET /v1/session admin,operator,tenant-admin,tenant,auditor -
DELETE /v1/session admin,operator,tenant-admin,tenant,auditor -
GET /v1/events admin,operator,tenant-admin,tenant,auditor -
POST /v1/leases admin,operator,tenant-admin,tenant {}
GET /v1/leases admin,operator,tenant-admin,tenant,auditor -
GET /v1/leases/{id} admin,operator,tenant-admin,tenant,auditor -
POST /v1/leases/{id}/release admin,operator,tenant-admin,tenant -
POST /v1/leases/{id}/extend admin,operator,tenant-admin,tenant -
POST /v1/leases/{id}/scale admin,operator,tenant-admin,tenant -
GET /v1/queue admin,operator,tenant-admin,tenant,auditor -
POST /v1/reservations admin,operator {}
GET /v1/reservations admin,operator,tenant-admin,tenant,auditor -
GET /v1/prices admin,operator,tenant-admin,tenant,auditor -
POST /v1/prices admin,operator {}
GET /v1/tenants/{name}/balance admin,operator,tenant-admin,tenant,auditor -
GET /v1/tenants/{name}/ledger admin,operator,tenant-admin,tenant,auditor -
POST /v1/tenants/{name}/topups admin,operator {}
POST /v1/tenants/{name}/credits admin,operator {}
POST /v1/tenants/{name}/credit-line admin,operator {}
GET /v1/tenants/{name}/invoices/{month} admin,operator,tenant-admin,tenant,auditor -
GET /v1/usage admin,operator,tenant-admin,tenant,auditor -
GET /v1/revenue/{month} admin,operator,auditor -
GET /v1/audit/log admin,operator,tenant-admin,tenant,auditor -
GET /v1/audit/checkpoint admin,operator,tenant-admin,tenant,auditor -
POST /v1/audit/checkpoint admin,operator {}
GET /v1/audit/proof admin,operator,tenant-admin,tenant,auditor -
GET /v1/audit/consistency admin,operator,tenant-admin,tenant,auditor -
GET /v1/audit/verify admin,operator,auditor -
GET /v1/audit/export admin,operator,tenant-admin,tenant,auditor -
POST /v1/jobs admin,operator,tenant-admin,tenant {}
GET /v1/jobs admin,operator,tenant-admin,tenant,auditor -
GET /v1/jobs/{id} admin,operator,tenant-admin,tenant,auditor -
POST /v1/jobs/{id}/cancel admin,operator,tenant-admin,tenant {}
GET /v1/jobs/{id}/logs admin,operator,tenant-admin,tenant,auditor -
POST /v1/instances admin,operator,tenant-admin,tenant {}
GET /v1/instances admin,operator,tenant-admin,tenant,auditor -
GET /v1/instances/{id} admin,operator,tenant-admin,tenant,auditor -
POST /v1/instances/{id}/stop admin,operator,tenant-admin,tenant {}
POST /v1/instances/{id}/start admin,operator,tenant-admin,tenant {}
POST /v1/instances/{id}/release admin,operator,tenant-admin,tenant {}
GET /v1/instances/{id}/logs admin,operator,tenant-admin,tenant,auditor -
POST /v1/ssh-keys admin,operator,tenant-admin,tenant,auditor {}
GET /v1/ssh-keys admin,operator,tenant-admin,tenant,auditor -
DELETE /v1/ssh-keys/{name} admin,operator,tenant-admin,tenant,auditor -
POST /v1/agent/migrations/{id}/{part} agent -
POST /v1/agent/migrations/{id}/{part}/done agent {}
GET /v1/agent/migrations/{id}/{part} agent -
POST /v1/images admin,operator {}
GET /v1/images admin,operator,tenant-admin,tenant,auditor -
POST /v1/agent-tokens admin,operator {}
POST /v1/agent/register agent {}
POST /v1/agent/heartbeat agent {}
GET /v1/agent/work agent -
POST /v1/agent/logs agent -'
ROLES="admin operator tenant-admin tenant auditor agent"

# The daemon's own table must match this one exactly.
"$SUANLID" routes --json >"$TMP/routes.json"
expect_eq "routes --json is a JSON array" "$(jq -r type "$TMP/routes.json")" array
theirs=$(jq -r '.[] | .method + " " + .path + " " + (if .auth then (.roles | join(",")) else "none" end)' \
	"$TMP/routes.json" | sort)
ours=$(printf '%s\n' "$TABLE" | awk '{print $1, $2, $3}' | sort)
if [ "$theirs" = "$ours" ]; then
	ok "route table matches the permission table ($(printf '%s\n' "$ours" | wc -l) routes)"
else
	bad "route table matches the permission table" "$(diff <(printf '%s\n' "$ours") <(printf '%s\n' "$theirs"))"
fi

"$SUANLID" init --data "$DATA" >/dev/null || { bad "init"; finish; exit 1; }
if ! start_daemon "$TMP/log" --data "$DATA" --fleet "$SL_ROOT/examples/demo-fleet.yaml" --simulate \
	--unreachable-after 3600 --down-after 3600; then
	bad "daemon starts" "$(cat "$TMP/log")"
	finish
	exit 1
fi
declare -A TOK
TOK[admin]=$(cat "$DATA/admin.token")
api "${TOK[admin]}" POST /v1/tenants '{"name":"acme"}' >/dev/null
for role in operator tenant-admin tenant auditor agent; do
	case $role in tenant*) b="{\"role\":\"$role\",\"tenant\":\"acme\"}" ;; *) b="{\"role\":\"$role\"}" ;; esac
	r=$(api "${TOK[admin]}" POST /v1/tokens "$b")
	TOK[$role]=$(body_of "$r" | jq -r .token)
done
# The agent probes with a node credential: a plain agent token is a join
# token, which registers a node and gets the credential the other agent
# routes need (docs/agent-protocol.md).
disc=$(api "${TOK[admin]}" GET /v1/nodes/fza-h100-001 | sed 's/^[0-9]* //' | jq -c '
	{source: "simulate", model: .model, driver: "", clique: "",
	 gpus: [.topology.numa | to_entries[] | {index: .key, numa: .value}],
	 links: .topology.links, nics: .topology.nics}')
r=$(api "${TOK[agent]}" POST /v1/agent/register \
	"{\"node\":\"fza-h100-001\",\"addr\":\"127.0.0.1\",\"boot_id\":\"b\",\"discovery\":$disc}")
expect_eq "a plain agent token registers a node" "$(status_of "$r")" 200
TOK[agent]=$(body_of "$r" | jq -r .credential)

# The audit log must get one entry per probe that changes state (the route
# table's "mutates") or is denied, and none for allowed reads: counted below.
declare -A MUTATES
while read -r m p v; do MUTATES["$m $p"]=$v; done < <(jq -r '.[] | "\(.method) \(.path) \(.mutates)"' "$TMP/routes.json")
audit_want=8 # the fleet loaded at start, the tenant, the five tokens made above, the registration
denied=0
fails=0 checks=0
while read -r method path roles body; do
	p=${path//\{name\}/}
	case $path in
	/v1/nodes/*) p=${path//\{name\}/fza-h100-001} ;;
	/v1/tenants/*) p=${path//\{name\}/acme} ;;
	/v1/tokens/*) p=${path//\{id\}/tok_000000000000} ;;
	/v1/users/*) p=${path//\{name\}/nobody} ;;
	/v1/leases/*) p=${path//\{id\}/ls-999999} ;;
	/v1/jobs/*) p=${path//\{id\}/job-999999} ;;
	/v1/instances/*) p=${path//\{id\}/in-999999} ;;
	/v1/ssh-keys/*) p=/v1/ssh-keys/nokey ;;
	/v1/agent/migrations/*) p=${path//\{id\}/in-999999}; p=${p//\{part\}/system} ;;
	/v1/agent/work) p="$path?wait=0" ;; # else a long poll
	*) p=$path ;;
	esac
	[ "$body" = "-" ] && body=""
	for role in $ROLES; do
		r=$(api "${TOK[$role]}" "$method" "$p" "$body")
		s=$(status_of "$r")
		checks=$((checks + 1))
		if [ "$roles" = none ] || [[ ",$roles," == *",$role,"* ]]; then
			case $s in 401 | 403 | 405 | 000) fails=$((fails + 1)); bad "$role may $method $path" "got $s: $(body_of "$r")" ;; esac
			# A route without a token (sign-in) records only the attempts it
			# verified (sessions.c), and a body without fields is none.
			[ "${MUTATES["$method $path"]}" = true ] && [ "$roles" != none ] &&
				audit_want=$((audit_want + 1))
		else
			[ "$s" = 403 ] || { fails=$((fails + 1)); bad "$role may not $method $path" "got $s: $(body_of "$r")"; }
			audit_want=$((audit_want + 1)) denied=$((denied + 1))
		fi
	done
done <<<"$TABLE"
[ "$fails" -eq 0 ] && ok "$checks route x role checks as designed"

r=$(api "${TOK[admin]}" GET '/v1/audit/log?limit=100000')
expect_eq "one audit entry per denied or state-changing probe, none per allowed read" \
	"$(body_of "$r" | jq length)" "$audit_want"
expect_eq "each denied probe's entry says denied" \
	"$(body_of "$r" | jq '[.[] | select(.outcome == "denied")] | length')" "$denied"
r=$(api "${TOK[admin]}" GET /v1/leases)
expect_eq "the allowed probes changed nothing (no leases)" "$(body_of "$r" | jq length)" 0
r=$(api "${TOK[admin]}" GET /v1/nodes/fza-h100-001)
expect_eq "the allowed probes changed nothing (node ready)" "$(body_of "$r" | jq -r .state)" ready
stop_daemon
expect_eq "daemon stops cleanly" "$?" 0
finish
