"""A loopback file server for scripts/bench-torch-ops: serves one directory,
answers `Range: bytes=N-` with 206 (what resuming a cut download needs), and
with --cut-once F closes the first whole-file answer of each file after the
fraction F of its bytes (a transfer cut halfway). Each request is logged as
one JSON line (path, range start, bytes sent) to --log."""

import argparse
import http.server
import json
import os
import socketserver
import sys

args = None
cut_done = set()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        path = os.path.join(args.directory, self.path.lstrip("/").split("?")[0])
        if not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(path)
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and rng[6:].split("-")[0].isdigit():
            start = int(rng[6:].split("-")[0])
        limit = size - start
        if start == 0 and args.cut_once and self.path not in cut_done:
            cut_done.add(self.path)
            limit = int(size * args.cut_once)
        if start:
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(size - start))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        sent = 0
        with open(path, "rb") as f:
            f.seek(start)
            while sent < limit:
                chunk = f.read(min(1 << 20, limit - sent))
                if not chunk:
                    break
                try:
                    self.wfile.write(chunk)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += len(chunk)
        with open(args.log, "a") as log:
            log.write(json.dumps({"path": self.path, "start": start, "sent": sent}) + "\n")
        if sent < size - start:
            self.close_connection = True
            self.connection.shutdown(2)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    global args
    p = argparse.ArgumentParser()
    p.add_argument("--directory", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--cut-once", type=float, default=0.0)
    args = p.parse_args()
    server = Server(("127.0.0.1", 0), Handler)
    with open(args.port_file, "w") as f:
        f.write(str(server.server_address[1]))
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
