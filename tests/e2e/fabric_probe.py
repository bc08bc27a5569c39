"""fabric_probe.py - the small jobs of test_torchrun_partial.sh (run by
python3 inside the ranks' containers; the text travels in the env).

  hold   every rank listens on port 7100 and prints "ip=<its eth0 address>";
         rank 1 connects to rank 0 (MASTER_ADDR:7100) and prints "peer
         REACHED"; rank 0 prints "accepted from A" for each connection it
         takes, until the job is cancelled.
  try    connects to each address of TARGETS on port 7100 and prints
         "A REACHED" or "A no"; rank 0 also listens on 7200 and rank 1
         connects to it (the tenant's own path works: "own REACHED").
"""
import os
import socket
import sys
import time


def my_ip():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.connect((os.environ["MASTER_ADDR"], 9))
    return u.getsockname()[0]


def try_conn(addr, port, tries=1):
    for _ in range(tries):
        c = socket.socket()
        c.settimeout(2)
        try:
            c.connect((addr, port))
            return True
        except OSError:
            time.sleep(0.5)
        finally:
            c.close()
    return False


def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(16)
    return s


def main():
    mode, rank = sys.argv[1], int(os.environ["NODE_RANK"])
    master = os.environ["MASTER_ADDR"]
    try:
        with open("/proc/net/if_inet6") as f:
            inet6 = len(f.readlines())
    except OSError:
        inet6 = 0
    print("ip=%s master=%s ifname=%s inet6=%d" % (my_ip(), master,
                                                  os.environ.get("GLOO_SOCKET_IFNAME"), inet6),
          flush=True)
    if mode == "hold":
        s = listener(7100)
        print("listening", flush=True)
        if rank == 1:
            print("peer REACHED" if try_conn(master, 7100, 40) else "peer no", flush=True)
        while True:
            a, peer = s.accept()
            print("accepted from %s" % peer[0], flush=True)
            a.close()
    s = listener(7200) if rank == 0 else None
    for t in os.environ["TARGETS"].split(","):
        print("%s %s" % (t, "REACHED" if try_conn(t, 7100) else "no"), flush=True)
    if rank == 1:
        print("own %s" % ("REACHED" if try_conn(master, 7200, 40) else "no"), flush=True)
    else:
        s.settimeout(60)
        try:
            s.accept()
        except OSError:
            pass
    print("done", flush=True)


if __name__ == "__main__":
    main()
