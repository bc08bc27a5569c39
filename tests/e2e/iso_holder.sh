# iso_holder.sh - the other tenant's job in test_isolation.sh (its `sh -c`
# text, inside its container): a file, a marker process (sleep 4242), a
# listener on port 7001, and a loop that tries the first tenant's port 7002
# on loopback and on the node's address, printing "REACHED" if it ever gets in
# and "tick N" every half second (the test watches it carry on).
echo secret > /work/secret-beta
sleep 4242 &
exec python3 - <<'PY'
import os, socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7001))
s.listen()
print("holder listening", flush=True)
host, n = os.environ["HOSTADDR"], 0
while True:
    for a in ("127.0.0.1", host):
        c = socket.socket()
        c.settimeout(0.3)
        try:
            c.connect((a, 7002))
            print("REACHED %s:7002" % a, flush=True)
        except OSError:
            pass
        c.close()
    n += 1
    print("tick %d" % n, flush=True)
    time.sleep(0.5)
PY
