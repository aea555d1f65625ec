#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The fastest producer the bench client can be fed by (issue 11: "the bench
client must not be the bottleneck"). It speaks just enough of Tether's API and
WebSocket protocol (docs/protocol.md) for `bench_client cat FILE ws URL KEY --
...`: POST /api/sessions answers an id, GET /ws/ID upgrades (RFC 6455 §4.2.2),
sends "attached" and the ready marker, waits for the client's first byte, then
sends FILE from memory in 64 KiB binary frames built in advance (as the server
frames its output), then "exit". No PTY, no ring, no parsing: what the client
receives per second here is the most it can take, and compared with Tether's
figure of the same run it says whether the client limits that figure.

Usage: trivial_producer.py FILE   prints "PORT\\n" once listening on 127.0.0.1
(port 0), serves until stdin closes or SIGTERM. Any access key is accepted.
"""
import base64
import hashlib
import json
import os
import socket
import socketserver
import struct
import sys
import threading

GUID = b'258EAFA5-E914-47DA-95CA-C5AB0DC85B11'  # RFC 6455 §1.3
CHUNK = 64 * 1024


def frame(opcode, payload):
    """An unmasked server frame (RFC 6455 §5.2), FIN set."""
    n = len(payload)
    if n <= 125:
        head = struct.pack('!BB', 0x80 | opcode, n)
    elif n <= 0xFFFF:
        head = struct.pack('!BBH', 0x80 | opcode, 126, n)
    else:
        head = struct.pack('!BBQ', 0x80 | opcode, 127, n)
    return head + payload


def read_frame(f):
    """One client frame (masked): (opcode, payload), or None at EOF."""
    head = f.read(2)
    if len(head) < 2:
        return None
    n = head[1] & 0x7F
    if n == 126:
        n = struct.unpack('!H', f.read(2))[0]
    elif n == 127:
        n = struct.unpack('!Q', f.read(8))[0]
    mask = f.read(4) if head[1] & 0x80 else b'\0\0\0\0'
    data = bytearray(f.read(n))
    for i in range(len(data)):
        data[i] ^= mask[i % 4]
    return head[0] & 0x0F, bytes(data)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while True:
            line = self.rfile.readline()
            if not line:
                return
            method, target = line.split()[:2]
            headers = {}
            while True:
                h = self.rfile.readline().strip()
                if not h:
                    break
                k, _, v = h.partition(b':')
                headers[k.strip().lower()] = v.strip()
            body = self.rfile.read(int(headers.get(b'content-length', b'0')))
            del body
            if target.startswith(b'/ws/'):
                self.websocket(headers)
                return
            if method == b'POST':
                answer = json.dumps({'id': 'trivial'}).encode()
                status = b'201 Created'
            else:  # DELETE at the end of a run
                answer, status = b'', b'204 No Content'
            self.wfile.write(b'HTTP/1.1 ' + status + b'\r\nContent-Type: application/json\r\nContent-Length: '
                             + str(len(answer)).encode() + b'\r\n\r\n' + answer)

    def websocket(self, headers):
        accept = base64.b64encode(hashlib.sha1(headers[b'sec-websocket-key'] + GUID).digest())
        self.wfile.write(b'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n'
                         b'Sec-WebSocket-Accept: ' + accept + b'\r\n\r\n')
        attached = {'type': 'attached', 'id': 'trivial', 'mode': 'control', 'reset': True, 'reason': 'initial',
                    'replay_from': 0, 'prelude_bytes': 0, 'replay_bytes': 0, 'offset': 0, 'state': 'running',
                    'cols': 80, 'rows': 24, 'title': ''}
        self.wfile.write(frame(0x1, json.dumps(attached).encode()) + frame(0x2, b'@@GO@@'))
        while True:  # the client's first byte starts the clock
            f = read_frame(self.rfile)
            if f is None:
                return
            if f[0] == 0x2:
                break
        for fr in self.server.frames:
            self.request.sendall(fr)
        self.request.sendall(frame(0x1, json.dumps({'type': 'exit', 'code': 0, 'signal': None}).encode()))
        while read_frame(self.rfile) is not None:  # until the client closes
            pass


def main():
    data = open(sys.argv[1], 'rb').read()
    server = socketserver.ThreadingTCPServer(('127.0.0.1', 0), Handler)
    server.daemon_threads = True
    server.frames = [frame(0x2, data[i:i + CHUNK]) for i in range(0, len(data), CHUNK)]
    print(server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # the bench closes our stdin (or ends us) when done
    os._exit(0)


if __name__ == '__main__':
    main()
