#!/usr/bin/env bash
# make run: the controller on its embedded SQLite store, serving the demo fleet in
# simulate mode (nodes count as present and healthy, so leases become active).
set -euo pipefail
B=${1:-build/release}
DATA=${SUANLI_DATA:-var/data}
LISTEN=${SUANLI_LISTEN:-127.0.0.1:7400}
if [ ! -f "$DATA/suanli.db" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$B/suanlid" init --data "$DATA" >/dev/null
fi
cat <<MSG

suanlid: http://$LISTEN   (data in $DATA, fleet examples/demo-fleet.yaml, simulated nodes)
admin token: $(cat "$DATA/admin.token")

Try, in another shell:
  export SUANLI_SERVER=http://$LISTEN SUANLI_TOKEN=\$(cat $DATA/admin.token)
  $B/suanli nodes
  $B/suanli tenant create acme --regions cn-east --quota gb200=72
  $B/suanli price set --model gb200 --plan hourly --price 3500
  $B/suanli topup --tenant acme --amount 10000000
  $B/suanli lease create --tenant acme --gpus 16 --model gb200 --plan hourly
  $B/suanli invoice --tenant acme --month \$(TZ=Asia/Shanghai date +%Y-%m)

Ctrl-C stops the controller; its state stays in $DATA.

MSG
exec "$B/suanlid" serve --data "$DATA" --listen "$LISTEN" \
	--fleet examples/demo-fleet.yaml --simulate --billing-zone Asia/Shanghai
