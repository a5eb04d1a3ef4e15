"""Read one uploaded file from a multipart/form-data body, with limits that answer a clear 4xx.

Starlette's form parser caps a part's header line at ~4 KiB, so a file name of a few thousand characters
came back as a vague 400 "Invalid multipart data"; and it spools the whole file before the size is known.
This reader streams the body through ``python_multipart`` itself: the part header may hold a name of up to
``NameLimits.max_chars`` characters (a longer one is refused naming the limit), the file is counted as it
arrives (over the limit: 413 at once), and only the part named ``file`` is kept.
"""
from __future__ import annotations

from python_multipart.multipart import MultipartParser, parse_options_header

from app.uploads import NameLimits, UploadRefused, UploadTooLarge

FIELD = "file"
# the request body as OpenAPI documents it (the route reads the body itself, so FastAPI cannot infer it)
OPENAPI_BODY = {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
    "type": "object", "required": [FIELD],
    "properties": {FIELD: {"type": "string", "format": "binary",
                           "description": "PDF, DOCX, HTML, TXT/MD, XLSX, CSV, PNG, JPEG or TIFF; the file name "
                                          "(any script, up to 10,000 characters) is the document's name"}}}}}}}


class MissingFile(UploadRefused):
    status = 422


class _Part:
    def __init__(self):
        self.headers: list[tuple[bytes, bytes]] = []
        self.name: str | None = None
        self.filename: str | None = None


async def read_file_part(request, max_bytes: int, limits: NameLimits = NameLimits()) -> tuple[str, bytes]:
    """(file name, bytes) of the ``file`` part; raises UploadRefused (400/413/422) with a clear message."""
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise MissingFile(f"{FIELD}: send the document as multipart/form-data with a part named {FIELD!r}")
    state = {"part": _Part(), "field": b"", "value": b"", "found": None}
    data = bytearray()

    def on_part_begin():
        state["part"] = _Part()

    def on_header_field(buf, start, end):
        state["field"] += buf[start:end]

    def on_header_value(buf, start, end):
        state["value"] += buf[start:end]
        if len(state["value"]) > limits.max_header_bytes:
            raise UploadRefused(f"the part header is over {limits.max_header_bytes:,} bytes: the file name is "
                                f"longer than the limit of {limits.max_chars:,} characters")

    def on_header_end():
        state["part"].headers.append((state["field"].lower(), state["value"]))
        state["field"], state["value"] = b"", b""

    def on_headers_finished():
        part = state["part"]
        disposition = next((v for k, v in part.headers if k == b"content-disposition"), b"")
        _, options = parse_options_header(disposition.decode("latin-1"))
        part.name = _decode(options.get(b"name", b""))
        if b"filename" in options:
            part.filename = _decode(options[b"filename"])
        if part.name == FIELD and part.filename is not None and state["found"] is None:
            state["found"] = part

    def on_part_data(buf, start, end):
        if state["found"] is state["part"]:
            data.extend(buf[start:end])
            if len(data) > max_bytes:
                raise UploadTooLarge(f"{state['found'].filename}: over the {max_bytes // 2**20} MB limit")

    parser = MultipartParser(boundary, {
        "on_part_begin": on_part_begin, "on_header_field": on_header_field, "on_header_value": on_header_value,
        "on_header_end": on_header_end, "on_headers_finished": on_headers_finished, "on_part_data": on_part_data,
    }, max_header_size=limits.max_header_bytes + 1024, max_header_count=16)
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except UploadRefused:
        raise
    except Exception as exc:  # python_multipart's parse errors: a malformed body
        raise UploadRefused(f"malformed multipart body: {exc}") from exc
    found = state["found"]
    if found is None:
        raise MissingFile(f"{FIELD}: no part named {FIELD!r} with a file name in the multipart body")
    return found.filename, bytes(data)


def _decode(raw: bytes) -> str:
    """A header parameter as sent: UTF-8 (what browsers, curl and httpx send), else Latin-1."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")
