"""A Hugging Face Hub stand-in on loopback: answers ``hf_hub_download``'s file-resolve requests for one
dataset repo, as the Hub does, so ``--source hub`` runs its real download path in tests.

What the installed ``huggingface_hub`` asks (read from its ``file_download.py`` and seen in
:attr:`FakeHub.log`): ``HEAD {endpoint}/datasets/<repo>/resolve/<revision>/<path>``, whose answer must
carry ``X-Repo-Commit`` and an ``ETag`` (a missing one is an error); for a Git LFS file the Hub
answers ``302`` to a CDN URL on another host with ``X-Linked-Etag`` (the content's sha256) and
``X-Linked-Size``, and the client then ``GET``\\ s the CDN URL. A transfer cut short is resumed with
``Range: bytes=<n>-`` (``206`` and ``Content-Range`` expected; a ``200`` makes it start over). The CDN
here is the same server reached as ``localhost`` instead of ``127.0.0.1``, so it is another host.

Faults, set per instance before a request: ``drop_once`` (the first full ``GET`` of a file sends its
headers and ``drop_once`` bytes, then closes), ``drop_always`` (every ``GET`` closes after its headers),
``ignore_range`` (answer a range request with the whole file), ``no_length`` (a ``GET`` without
``Content-Length`` that closes after half the file, so the client sees a clean end), ``corrupt`` (the
bytes of the CDN differ in one byte from what the ``ETag`` names; same length).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, unquote


def git_blob_sha1(data: bytes) -> str:
    """Git's object id of a blob: what the Hub sends as the ``ETag`` of a file not stored in LFS."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeHub:
    repo_id: str
    files: dict[str, bytes]
    lfs: bool = True
    commit: str = ""
    log: list[tuple[str, str, str | None]] = field(default_factory=list)
    drop_once: int | None = None
    drop_always: bool = False
    ignore_range: bool = False
    no_length: bool = False
    corrupt: bool = False
    _dropped: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.commit:
            digest = hashlib.sha1()
            for path in sorted(self.files):
                digest.update(f"{path}\0{hashlib.sha256(self.files[path]).hexdigest()}\n".encode())
            self.commit = digest.hexdigest()
        self.by_sha = {hashlib.sha256(b).hexdigest(): b for b in self.files.values()}

    def __enter__(self) -> FakeHub:
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:
                hub._answer(self, body=False)

            def do_GET(self) -> None:
                hub._answer(self, body=True)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        port = self._server.server_address[1]
        self.url, self.cdn = f"http://127.0.0.1:{port}", f"http://localhost:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------------------------------

    def _answer(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        self.log.append((h.command, h.path, h.headers.get("Range")))
        prefix = f"/datasets/{self.repo_id}/resolve/"
        if h.path.startswith(prefix):
            revision, _, path = h.path[len(prefix) :].partition("/")
            revision, path = unquote(revision), unquote(path)
            if revision not in ("main", self.commit):
                return self._error(h, 404, "RevisionNotFound")
            if path not in self.files:
                return self._error(h, 404, "EntryNotFound")
            data = self.files[path]
            sha = hashlib.sha256(data).hexdigest()
            if self.lfs:
                h.send_response(302)
                h.send_header("Location", f"{self.cdn}/cdn/{sha}?name={quote(path)}")
                h.send_header("X-Linked-Etag", f'"{sha}"')
                h.send_header("X-Linked-Size", str(len(data)))
                h.send_header("ETag", f'"{git_blob_sha1(data)}"')  # the pointer's, as on the Hub
                h.send_header("X-Repo-Commit", self.commit)
                h.send_header("Content-Length", "0")
                h.end_headers()
                return None
            return self._send(h, data, body, git_blob_sha1(data), key=path)
        if h.path.startswith("/cdn/"):
            sha = h.path[len("/cdn/") :].partition("?")[0]
            if sha not in self.by_sha:
                return self._error(h, 404, "EntryNotFound")
            data = self.by_sha[sha]
            if self.corrupt:
                mid = len(data) // 2
                data = data[:mid] + bytes([data[mid] ^ 0x20]) + data[mid + 1 :]
            return self._send(h, data, body, sha, key=sha)
        return self._error(h, 404, "RepoNotFound")  # /api/... calls: not part of this stand-in

    def _error(self, h: BaseHTTPRequestHandler, status: int, code: str) -> None:
        h.send_response(status)
        h.send_header("X-Error-Code", code)
        h.send_header("X-Repo-Commit", self.commit)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _send(self, h: BaseHTTPRequestHandler, data: bytes, body: bool, etag: str, key: str) -> None:
        start, ranged = 0, h.headers.get("Range")
        if ranged and not self.ignore_range:
            start = int(ranged.removeprefix("bytes=").split("-")[0])
        part = data[start:]
        if body and self.no_length and not ranged:
            h.send_response(200)
            h.send_header("ETag", f'"{etag}"')
            h.send_header("Connection", "close")
            h.end_headers()
            h.wfile.write(part[: len(part) // 2])
            h.close_connection = True
            return
        h.send_response(206 if start else 200)
        h.send_header("ETag", f'"{etag}"')
        h.send_header("X-Repo-Commit", self.commit)
        h.send_header("Accept-Ranges", "bytes")
        h.send_header("Content-Length", str(len(part)))
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        h.end_headers()
        if not body:
            return
        cut = None
        if self.drop_always:
            cut = 0
        elif self.drop_once is not None and not ranged and key not in self._dropped:
            self._dropped.add(key)
            cut = self.drop_once
        if cut is None:
            h.wfile.write(part)
            return
        h.wfile.write(part[:cut])
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(2)  # the peer sees the connection end before the body does
