"""Job announcements on the status page's JSON API (issue 31): ``GET /api/jobs`` always;
``POST /api/jobs`` and ``DELETE /api/jobs/NAME`` only with ``listen.web_jobs: true``.

The page is read-only unless the operator opts in: with ``web_jobs`` off, a POST or DELETE is
405 as everywhere else. When on, the writes are guarded as the page can be: the body is JSON
(``Content-Type: application/json``, which a cross-site form cannot send without a preflight
this server never grants), at most :data:`MAX_BODY` bytes, read within the connection's
deadline (:mod:`controller.northbound.guarded_http`); the job is validated, journaled and
acknowledged by the same :class:`~controller.northbound.jobs.JobsApi` call as ``ctl job add``.

``POST /api/jobs`` takes ``{"job_yaml": "...", "start": unix_seconds?, "end": unix_seconds?}``
and answers 201 with the job; a refusal is 400 with the named error (``unknown_block: ...``).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from controller.northbound.api import ApiError, ApiErrorCode
from controller.northbound.jobs import jobs_api
from optimizer.limits import MAX_YAML_FILE_BYTES

JOBS_PATH = "/api/jobs"
#: The largest POST body taken (a job file, quoted as a JSON string, and two times).
MAX_BODY = 2 * MAX_YAML_FILE_BYTES + 1024


def list_jobs(api: object, query: dict[str, list[str]]) -> dict[str, Any]:
    return jobs_api(api).list_jobs()


def _time(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        problem = f"{key}: expected Unix seconds, got {type(value).__name__}"
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, problem)
    return float(value)


def post_job(api: object, content_type: str, body: bytes) -> dict[str, Any]:
    """The job ``body`` announces (see the module); raises ApiError naming the field."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, "Content-Type: a job is posted as application/json")
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"body: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, "body: expected a JSON object with job_yaml")
    unknown = sorted(set(data) - {"job_yaml", "start", "end"})
    if unknown:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, f"body: unknown keys {unknown} (job_yaml, start, end)")
    text = data.get("job_yaml")
    if not isinstance(text, str):
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT, "job_yaml: expected the job file as a string")
    return jobs_api(api).add_job(text, _time(data, "start"), _time(data, "end"))


def delete_job(api: object, path: str) -> dict[str, Any]:
    name = unquote(path[len(JOBS_PATH) + 1:])
    return {"message": jobs_api(api).remove_job(name)}


class JobWrites:
    """The handler's POST and DELETE (mixed into the page's request handler)."""

    server: Any
    headers: Any
    rfile: Any
    path: str

    def _refuse(self) -> None: ...

    def _send(self, status: HTTPStatus, body: bytes, kind: str, head: bool = False,
              extra: dict[str, str] | None = None) -> None: ...

    def do_POST(self) -> None:
        self._write("POST")

    def do_DELETE(self) -> None:
        self._write("DELETE")

    def _write(self, method: str) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if not getattr(self.server, "jobs_writes", False) or not path.startswith(JOBS_PATH):
            self._refuse()
            return
        from controller.ui.web import HTTP_STATUS_OF_API_ERROR

        try:
            if method == "POST" and path == JOBS_PATH:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 < length <= MAX_BODY:
                    problem = f"body: 1 to {MAX_BODY:,} bytes, got {length:,}"
                    raise ApiError(ApiErrorCode.INVALID_ARGUMENT, problem)
                answer = post_job(self.server.endpoints.api, self.headers.get("Content-Type", ""),
                                  self.rfile.read(length))
                status = HTTPStatus.CREATED
            elif method == "DELETE" and path.startswith(JOBS_PATH + "/"):
                answer, status = delete_job(self.server.endpoints.api, path), HTTPStatus.OK
            else:
                raise ApiError(ApiErrorCode.NOT_FOUND, f"{method} {path}: POST {JOBS_PATH} or DELETE "
                               f"{JOBS_PATH}/NAME")
            body = json.dumps(answer).encode()
        except ApiError as exc:
            status = HTTP_STATUS_OF_API_ERROR[exc.code]
            body = json.dumps({"error": exc.code.value, "message": exc.message}).encode()
        except ValueError:
            status = HTTPStatus.BAD_REQUEST
            error = {"error": "invalid_argument", "message": "Content-Length: not a number"}
            body = json.dumps(error).encode()
        self._send(status, body, "application/json")
