"""A transparent HTTP proxy in front of a real `brisk serve`, whose faults a
test switches on while traffic flows: the rollout tests' candidate that
regresses under canary. Modes:
  pass        forward as is
  slow        wait `delay_s` before forwarding a generation request
  break_json  non-stream answers' text replaced by text that is not JSON
  fail        generation requests answered 500
Health and model listing (GET) always pass, so the gateway keeps the replica
in rotation and only the answers regress."""
import http.client
import http.server
import json
import threading
import time


class FaultProxy:
    def __init__(self, upstream_port, upstream_host="127.0.0.1", host="127.0.0.1"):
        self.upstream_port = upstream_port
        self.upstream_host = upstream_host
        self.mode = "pass"
        self.delay_s = 1.0
        self.generations = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                self._forward(self.rfile.read(n))

            def _forward(self, body):
                generation = self.command == "POST"
                mode = proxy.mode
                if generation:
                    proxy.generations += 1
                    if mode == "fail":
                        return self._send(500, b'{"error":{"message":"injected fault"}}')
                    if mode == "slow":
                        time.sleep(proxy.delay_s)
                up = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port,
                                                timeout=120)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                try:
                    up.request(self.command, self.path, body=body, headers=headers)
                    r = up.getresponse()
                except OSError:  # the server behind is gone (the test's teardown)
                    return self._send(502, b'{"error":{"message":"upstream gone"}}')
                ctype = r.getheader("Content-Type", "application/json")
                if "text/event-stream" in ctype:
                    self.send_response(r.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while True:
                        piece = r.read1(65536)
                        if not piece:
                            break
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    up.close()
                    return
                data = r.read()
                up.close()
                if generation and mode == "break_json" and r.status == 200:
                    j = json.loads(data)
                    for c in j.get("choices", []):
                        if "message" in c:
                            c["message"]["content"] = "Sure! here it is: {broken"
                        else:
                            c["text"] = "Sure! here it is: {broken"
                    data = json.dumps(j).encode()
                self._send(r.status, data, ctype)

            def _send(self, status, data, ctype="application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
