"""A local stand-in for the Google endpoints the Drive and Sheets destinations call,
shaped after the real requests and responses:

- POST /token: the JWT bearer grant; the assertion's RS256 signature is verified against
  the test service account's public key, and its iss, aud, scope and exp are checked.
- Drive v3: files.list (the `q` terms we send), resumable create (POST) and update
  (PATCH) on /upload/drive/v3/files returning a session address in Location, chunk PUTs
  with Content-Range answered 308 + Range until the last byte, then 200 + the file.
- Sheets v4: spreadsheets.get, spreadsheets.batchUpdate (addSheet, deleteSheet,
  updateSheetProperties; atomic) and spreadsheets.values.batchUpdate, with grid limits.

Faults are injected through `faults`: HTTP errors, or a connection cut in the middle of a
request body.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import re
import secrets
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class DriveFile:
    id: str
    name: str
    parents: list[str]
    mime_type: str
    app_properties: dict[str, str]
    content: bytes
    revisions: int = 1


@dataclass
class UploadSession:
    metadata: dict[str, Any]
    total: int
    file_id: str | None
    received: bytearray = field(default_factory=bytearray)
    done: bool = False


@dataclass
class Sheet:
    properties: dict[str, Any]
    rows: dict[int, list[Any]] = field(default_factory=dict)

    def values(self) -> list[list[Any]]:
        return [self.rows[i] for i in sorted(self.rows)]


@dataclass
class FakeGoogleState:
    client_email: str
    public_key: rsa.RSAPublicKey
    token_uri: str = ""
    tokens: set[str] = field(default_factory=set)
    folders: dict[str, str] = field(default_factory=dict)  # id -> "writer" | "reader"
    files: dict[str, DriveFile] = field(default_factory=dict)
    sessions: dict[str, UploadSession] = field(default_factory=dict)
    spreadsheets: dict[str, dict[str, Any]] = field(default_factory=dict)
    readonly_spreadsheets: set[str] = field(default_factory=set)
    # fault name -> how many more times it fires
    faults: dict[str, int] = field(default_factory=dict)
    cut_after: int = 100_000
    requests: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fire(self, fault: str) -> bool:
        with self.lock:
            left = self.faults.get(fault, 0)
            if left > 0:
                self.faults[fault] = left - 1
                return True
            return False

    def new_spreadsheet(self, spreadsheet_id: str, sheets: dict[str, list[list[Any]]]) -> None:
        entries = []
        for index, (title, rows) in enumerate(sheets.items()):
            columns = max((len(r) for r in rows), default=1)
            entries.append(
                Sheet(
                    properties={
                        "sheetId": index,
                        "title": title,
                        "index": index,
                        "sheetType": "GRID",
                        "gridProperties": {
                            "rowCount": max(len(rows), 1000),
                            "columnCount": max(columns, 26),
                        },
                    },
                    rows={i + 1: list(r) for i, r in enumerate(rows)},
                )
            )
        self.spreadsheets[spreadsheet_id] = {
            "properties": {"title": spreadsheet_id},
            "sheets": entries,
            "next_id": 1000,
        }

    def sheet(self, spreadsheet_id: str, title: str) -> Sheet | None:
        for sheet in self.spreadsheets[spreadsheet_id]["sheets"]:
            if sheet.properties["title"] == title:
                return sheet
        return None


class ApiError(Exception):
    def __init__(self, status: int, message: str, reason: str, google_status: str) -> None:
        super().__init__(message)
        self.status, self.message, self.reason, self.google_status = (
            status,
            message,
            reason,
            google_status,
        )


def _bad_request(message: str) -> ApiError:
    return ApiError(400, message, "badRequest", "INVALID_ARGUMENT")


class Handler(BaseHTTPRequestHandler):
    server: FakeGoogleServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes; without this, Nagle and delayed ACKs
    # add ~40 ms to every response.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    @property
    def state(self) -> FakeGoogleState:
        return self.server.state

    # --- plumbing --------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, error: ApiError) -> None:
        self._send(
            error.status,
            {
                "error": {
                    "code": error.status,
                    "message": error.message,
                    "errors": [
                        {"message": error.message, "domain": "global", "reason": error.reason}
                    ],
                    "status": error.google_status,
                }
            },
        )

    def _authorised(self) -> None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Bearer ") or header[7:] not in self.state.tokens:
            raise ApiError(
                401,
                "Request had invalid authentication credentials.",
                "authError",
                "UNAUTHENTICATED",
            )

    def _dispatch(self, method: str) -> None:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self.state.lock:
            self.state.requests.append(
                (method, parts.path, int(self.headers.get("Content-Length") or 0))
            )
        try:
            if parts.path == "/token" and method == "POST":
                return self._token()
            self._authorised()
            if self.state.fire(f"{method} {parts.path.split('/')[1]} 503"):
                self._body()
                raise ApiError(
                    503, "The service is currently unavailable.", "backendError", "UNAVAILABLE"
                )
            if parts.path == "/drive/v3/files" and method == "GET":
                return self._drive_list(query)
            if (
                parts.path == "/upload/drive/v3/files"
                and method == "POST"
                and "upload_id" not in query
            ):
                return self._drive_start(query, None)
            match = re.fullmatch(r"/upload/drive/v3/files/([^/]+)", parts.path)
            if match and method == "PATCH":
                return self._drive_start(query, match.group(1))
            if parts.path == "/upload/drive/v3/files" and method == "PUT" and "upload_id" in query:
                return self._drive_chunk(query["upload_id"])
            match = re.fullmatch(
                r"/v4/spreadsheets/([^/:]+)(:batchUpdate|/values:batchUpdate)?", parts.path
            )
            if match:
                return self._sheets(method, match.group(1), match.group(2) or "")
            raise ApiError(404, f"no such endpoint {method} {parts.path}", "notFound", "NOT_FOUND")
        except ApiError as error:
            self._error(error)

    do_GET = lambda self: self._dispatch("GET")  # noqa: E731
    do_POST = lambda self: self._dispatch("POST")  # noqa: E731
    do_PUT = lambda self: self._dispatch("PUT")  # noqa: E731
    do_PATCH = lambda self: self._dispatch("PATCH")  # noqa: E731

    # --- OAuth ---------------------------------------------------------------------------

    def _token(self) -> None:
        form = {k: v[-1] for k, v in parse_qs(self._body().decode()).items()}
        if self.state.fire("token 503"):
            return self._send(503, {"error": "backend_error"})

        def refuse(description: str) -> None:
            self._send(400, {"error": "invalid_grant", "error_description": description})

        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return self._send(400, {"error": "unsupported_grant_type"})
        try:
            header_b64, claims_b64, signature_b64 = form["assertion"].split(".")
            header = json.loads(_unb64(header_b64))
            claims = json.loads(_unb64(claims_b64))
            self.state.public_key.verify(
                _unb64(signature_b64),
                f"{header_b64}.{claims_b64}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (KeyError, ValueError, InvalidSignature):
            return refuse("Invalid JWT Signature.")
        now = time.time()
        if header.get("alg") != "RS256":
            return refuse("Invalid JWT header.")
        if claims.get("iss") != self.state.client_email:
            return refuse("Invalid issuer.")
        if claims.get("aud") != self.state.token_uri:
            return refuse("Invalid JWT: audience does not match the token endpoint.")
        if (
            not claims.get("iat", 0) - 300 <= now < claims.get("exp", 0)
            or claims["exp"] - claims["iat"] > 3600
        ):
            return refuse("Invalid JWT: Token must be a short-lived token (60 minutes).")
        if not claims.get("scope"):
            return refuse("Invalid JWT: no scope.")
        token = "ya29." + secrets.token_urlsafe(32)
        self.state.tokens.add(token)
        self._send(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    # --- Drive ---------------------------------------------------------------------------

    def _file_resource(self, drive_file: DriveFile) -> dict[str, Any]:
        import hashlib

        return {
            "kind": "drive#file",
            "id": drive_file.id,
            "name": drive_file.name,
            "mimeType": drive_file.mime_type,
            "size": str(len(drive_file.content)),
            "sha256Checksum": hashlib.sha256(drive_file.content).hexdigest(),
            "webViewLink": f"https://drive.google.com/file/d/{drive_file.id}/view?usp=drivesdk",
        }

    def _folder_access(self, folder_id: str) -> None:
        access = self.state.folders.get(folder_id)
        if access is None:
            raise ApiError(404, f"File not found: {folder_id}.", "notFound", "NOT_FOUND")
        if access != "writer":
            raise ApiError(
                403,
                "The user does not have sufficient permissions for this file.",
                "insufficientFilePermissions",
                "PERMISSION_DENIED",
            )

    def _drive_list(self, query: dict[str, str]) -> None:
        q = query.get("q", "")
        parent = re.search(r"'([^']+)' in parents", q)
        job = re.search(
            r"appProperties has \{ key='quarryJobId' and value='((?:[^'\\]|\\.)*)' \}", q
        )
        name = re.search(r"name = '((?:[^'\\]|\\.)*)'", q)
        if not parent or parent.group(1) not in self.state.folders:
            raise ApiError(404, "File not found.", "notFound", "NOT_FOUND")
        found = [
            {"id": f.id, "name": f.name}
            for f in self.state.files.values()
            if parent.group(1) in f.parents
            and (not job or f.app_properties.get("quarryJobId") == job.group(1).replace("\\'", "'"))
            and (not name or f.name == name.group(1).replace("\\'", "'"))
        ]
        self._send(200, {"kind": "drive#fileList", "files": found})

    def _drive_start(self, query: dict[str, str], file_id: str | None) -> None:
        if query.get("uploadType") != "resumable":
            raise _bad_request("uploadType must be resumable")
        metadata = json.loads(self._body() or b"{}")
        total = int(self.headers.get("X-Upload-Content-Length", "-1"))
        if total < 0:
            raise _bad_request("X-Upload-Content-Length is required")
        if file_id is None:
            for parent in metadata.get("parents", []):
                self._folder_access(parent)
        elif file_id not in self.state.files:
            raise ApiError(404, f"File not found: {file_id}.", "notFound", "NOT_FOUND")
        upload_id = secrets.token_urlsafe(24)
        self.state.sessions[upload_id] = UploadSession(
            metadata=metadata, total=total, file_id=file_id
        )
        host = self.headers["Host"]
        location = f"http://{host}/upload/drive/v3/files?uploadType=resumable&upload_id={upload_id}"
        self._send(200, None, {"Location": location})

    def _drive_chunk(self, upload_id: str) -> None:
        session = self.state.sessions.get(upload_id)
        if session is None:
            raise ApiError(404, "Upload session not found.", "notFound", "NOT_FOUND")
        content_range = self.headers.get("Content-Range", "")
        length = int(self.headers.get("Content-Length") or 0)
        if length and self.state.fire("cut chunk"):
            # Read part of the chunk, then drop the connection without an answer.
            self.rfile.read(min(length, self.state.cut_after))
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        body = self.rfile.read(length) if length else b""
        if self.state.fire("chunk 503"):
            raise ApiError(503, "Service unavailable.", "backendError", "UNAVAILABLE")
        match = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", content_range)
        if match:
            start, end = int(match.group(1)), int(match.group(2))
            if start == len(session.received) and end - start + 1 == len(body):
                session.received.extend(body)
        elif not re.fullmatch(r"bytes \*/(\d+)", content_range):
            raise _bad_request("bad Content-Range")
        if len(session.received) >= session.total:
            return self._drive_finish(upload_id, session)
        headers = {"Range": f"bytes=0-{len(session.received) - 1}"} if session.received else {}
        self._send(308, None, headers)

    def _drive_finish(self, upload_id: str, session: UploadSession) -> None:
        metadata = session.metadata
        if session.done:
            # A status query after the last chunk: the file, unchanged.
            return self._send(200, self._file_resource(self.state.files[str(session.file_id)]))
        session.done = True
        if session.file_id:
            drive_file = self.state.files[session.file_id]
            drive_file.content = bytes(session.received)
            drive_file.name = metadata.get("name", drive_file.name)
            drive_file.revisions += 1
        else:
            drive_file = DriveFile(
                id=secrets.token_urlsafe(20),
                name=metadata.get("name", "Untitled"),
                parents=list(metadata.get("parents", [])),
                mime_type=metadata.get("mimeType", "application/octet-stream"),
                app_properties=dict(metadata.get("appProperties", {})),
                content=bytes(session.received),
            )
            self.state.files[drive_file.id] = drive_file
            session.file_id = drive_file.id
        self._send(200, self._file_resource(drive_file))

    # --- Sheets --------------------------------------------------------------------------

    def _sheets(self, method: str, spreadsheet_id: str, action: str) -> None:
        spreadsheet = self.state.spreadsheets.get(spreadsheet_id)
        if spreadsheet is None:
            raise ApiError(404, "Requested entity was not found.", "notFound", "NOT_FOUND")
        if action and spreadsheet_id in self.state.readonly_spreadsheets:
            self._body()
            raise ApiError(
                403, "The caller does not have permission", "forbidden", "PERMISSION_DENIED"
            )
        if method == "GET" and not action:
            return self._send(
                200,
                {
                    "spreadsheetId": spreadsheet_id,
                    "sheets": [
                        {"properties": copy.deepcopy(s.properties)} for s in spreadsheet["sheets"]
                    ],
                },
            )
        body = self._body()
        if len(body) > 2 * 1024 * 1024:
            raise _bad_request("Request payload size exceeds the limit: 2097152 bytes.")
        payload = json.loads(body)
        if action == ":batchUpdate":
            return self._sheets_batch_update(spreadsheet_id, spreadsheet, payload)
        if action == "/values:batchUpdate":
            return self._values_batch_update(spreadsheet_id, spreadsheet, payload)
        raise ApiError(404, "no such method", "notFound", "NOT_FOUND")

    def _sheets_batch_update(
        self, spreadsheet_id: str, spreadsheet: dict[str, Any], payload: dict[str, Any]
    ) -> None:
        # Applied to a copy and committed only if every request succeeds: atomic, as the API.
        sheets: list[Sheet] = copy.deepcopy(spreadsheet["sheets"])
        next_id = spreadsheet["next_id"]
        replies: list[dict[str, Any]] = []

        def by_id(sheet_id: int) -> Sheet:
            for sheet in sheets:
                if sheet.properties["sheetId"] == sheet_id:
                    return sheet
            raise _bad_request(f"No grid with id: {sheet_id}")

        for request in payload.get("requests", []):
            ((kind, args),) = request.items()
            if kind == "addSheet":
                properties = copy.deepcopy(args.get("properties", {}))
                if any(s.properties["title"] == properties.get("title") for s in sheets):
                    raise _bad_request(
                        "Invalid requests[0].addSheet: A sheet with the name "
                        f'"{properties.get("title")}" already exists.'
                    )
                properties.setdefault("sheetId", next_id)
                next_id += 1
                properties.setdefault("index", len(sheets))
                properties.setdefault("sheetType", "GRID")
                properties.setdefault("gridProperties", {"rowCount": 1000, "columnCount": 26})
                sheets.append(Sheet(properties=properties))
                replies.append({"addSheet": {"properties": copy.deepcopy(properties)}})
            elif kind == "deleteSheet":
                sheet = by_id(args["sheetId"])
                sheets.remove(sheet)
                if not any(not s.properties.get("hidden") for s in sheets):
                    raise _bad_request("You can't remove all the visible sheets in a document.")
                replies.append({})
            elif kind == "updateSheetProperties":
                properties = args["properties"]
                sheet = by_id(properties["sheetId"])
                for name in args["fields"].split(","):
                    if name == "title" and any(
                        s is not sheet and s.properties["title"] == properties["title"]
                        for s in sheets
                    ):
                        raise _bad_request(
                            f'A sheet with the name "{properties["title"]}" already exists.'
                        )
                    sheet.properties[name] = properties[name]
                replies.append({})
            else:
                raise _bad_request(f"unsupported request {kind}")
        cells = sum(
            s.properties["gridProperties"]["rowCount"]
            * s.properties["gridProperties"]["columnCount"]
            for s in sheets
        )
        if cells > 10_000_000:
            raise _bad_request(
                "This action would increase the number of cells in the workbook above the "
                "limit of 10000000 cells."
            )
        sheets.sort(key=lambda s: s.properties.get("index", 0))
        spreadsheet["sheets"] = sheets
        spreadsheet["next_id"] = next_id
        self._send(200, {"spreadsheetId": spreadsheet_id, "replies": replies})

    def _values_batch_update(
        self, spreadsheet_id: str, spreadsheet: dict[str, Any], payload: dict[str, Any]
    ) -> None:
        if payload.get("valueInputOption") not in ("RAW", "USER_ENTERED"):
            raise _bad_request("valueInputOption is required")
        if self.state.fire("values 429"):
            self._send(
                429,
                {
                    "error": {
                        "code": 429,
                        "message": "Quota exceeded",
                        "status": "RESOURCE_EXHAUSTED",
                        "errors": [{"reason": "rateLimitExceeded"}],
                    }
                },
                {"Retry-After": "0"},
            )
            return
        updated_rows = updated_cells = 0
        responses = []
        for value_range in payload.get("data", []):
            match = re.fullmatch(r"'((?:[^']|'')*)'!A(\d+)", value_range["range"])
            if not match:
                raise _bad_request(f"Unable to parse range: {value_range['range']}")
            title, first = match.group(1).replace("''", "'"), int(match.group(2))
            sheet = next((s for s in spreadsheet["sheets"] if s.properties["title"] == title), None)
            if sheet is None:
                raise _bad_request(f"Unable to parse range: {value_range['range']}")
            grid = sheet.properties["gridProperties"]
            values = value_range.get("values", [])
            last = first + len(values) - 1
            width = max((len(r) for r in values), default=0)
            if last > grid["rowCount"] or width > grid["columnCount"]:
                raise _bad_request(
                    f"Range ('{title}'!A{first}) exceeds grid limits. "
                    f"Max rows: {grid['rowCount']}, max columns: {grid['columnCount']}"
                )
            for offset, row in enumerate(values):
                sheet.rows[first + offset] = list(row)
            updated_rows += len(values)
            updated_cells += sum(len(r) for r in values)
            responses.append(
                {
                    "spreadsheetId": spreadsheet_id,
                    "updatedRange": value_range["range"],
                    "updatedRows": len(values),
                    "updatedCells": sum(len(r) for r in values),
                }
            )
        self._send(
            200,
            {
                "spreadsheetId": spreadsheet_id,
                "totalUpdatedRows": updated_rows,
                "totalUpdatedCells": updated_cells,
                "totalUpdatedSheets": len(responses),
                "responses": responses,
            },
        )


class FakeGoogleServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: FakeGoogleState) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = state
        self.state.token_uri = f"http://127.0.0.1:{self.server_address[1]}/token"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"
