# iso_probe.sh - what a job of one tenant sees of the server it shares
# (test_isolation.sh passes this text as the job's `sh -c` command; it runs
# inside the tenant's container). One KEY=VALUE line per fact; the test
# decides. Env: CRED, STATE (host paths of the agent's credential and state
# directory), OTHER_WORK (the other lease's working directory on the host),
# HOSTADDR (the node's address), CTL (the controller, ADDR:PORT).
echo "uid_map=$(awk '{print $1":"$2":"$3}' /proc/self/uid_map)"
echo "uid=$(id -u)"
if cat "$CRED" >/dev/null 2>&1; then echo cred=READABLE; else echo cred=unreadable; fi
if ls "$STATE" >/dev/null 2>&1; then echo state=VISIBLE; else echo state=invisible; fi
if ls "$OTHER_WORK" >/dev/null 2>&1 || [ -e /work/secret-beta ]; then echo other_files=VISIBLE; else echo other_files=invisible; fi
echo "other_procs=$(ps ax -o args= | grep -c '^sleep 4242')"
echo "procs=$(ps ax -o pid= | wc -l)"
echo "gpus=$(ls /dev | grep -E '^nvidia[0-9]+$' | tr '\n' ' ')"
echo "cuda_visible=$CUDA_VISIBLE_DEVICES"
if (echo x > /usr/probe-write) 2>/dev/null; then echo rootfs=WRITABLE; else echo rootfs=readonly; fi
echo mine > /work/mine && echo "work=$(cat /work/mine)"
python3 - <<'PY'
import os, socket, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 7002))
s.listen()
print("bind=ok", flush=True)
# rank 0's rendezvous port, published on the node for its lease's other ranks
m = socket.socket()
m.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
m.bind(("0.0.0.0", int(os.environ["MASTER_PORT"])))
m.listen(16)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.connect(("192.0.2.1", 9))
    print("ip=" + u.getsockname()[0], flush=True)
except OSError:
    print("ip=none", flush=True)
print("master_port=" + os.environ["MASTER_PORT"], flush=True)
def reach(addr, port):
    c = socket.socket()
    c.settimeout(1)
    try:
        c.connect((addr, port))
        return "REACHED"
    except OSError as e:
        return "no(%s)" % (e.strerror or e)
    finally:
        c.close()
host = os.environ["HOSTADDR"]
ctl, port = os.environ["CTL"].rsplit(":", 1)
print("reach_other_lo=" + reach("127.0.0.1", 7001), flush=True)
print("reach_other_host=" + reach(host, 7001), flush=True)
print("reach_ctl=" + reach(ctl, int(port)), flush=True)
# its own rendezvous through the node's address (torchrun's rank 0 does this)
print("reach_own_published=" + reach(host, int(os.environ["MASTER_PORT"])), flush=True)
print("probe listening", flush=True)
time.sleep(12)  # the other tenant and another host try our ports meanwhile
print("probe done", flush=True)
PY
