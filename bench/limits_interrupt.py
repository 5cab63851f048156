#!/usr/bin/env python3
# limits_interrupt.py BINARY [ARGS...]: `rpcbench limits` against a loopback listener that
# accepts and never answers (--timeout 1h), SIGINT once the probe connected; prints how long
# the process took to exit after it, or that it was still running 20 s later.
import socket, subprocess, sys, time, signal
bin=sys.argv[1]; extra=sys.argv[2:]
l=socket.socket(); l.bind(("127.0.0.1",0)); l.listen(16)
url="http://127.0.0.1:%d"%l.getsockname()[1]
p=subprocess.Popen([bin,"limits",url,"--timeout","1h","-f","json"]+extra,stdout=subprocess.PIPE,stderr=subprocess.PIPE)
c,_=l.accept(); time.sleep(0.3)
t=time.time(); p.send_signal(signal.SIGINT)
try:
    out,err=p.communicate(timeout=20); print("exit",p.returncode,"after %.2fs"%(time.time()-t)); print(err.decode()[-300:])
except subprocess.TimeoutExpired:
    print("still running 20s after SIGINT"); p.kill()
