"""Job announcements on the northbound API (issue 31): ``AddJob``, ``RemoveJob``, ``ListJobs``.

Three pieces, each mixed into the class that serves the rest of the API:

- :class:`JobsApi`, the operations (the daemon's are :class:`DaemonJobs`, mixed into
  :class:`~controller.northbound.daemon_api.DaemonApi`; an API without them answers
  UNAVAILABLE: :func:`jobs_api`);
- :class:`JobsRpcs`, the gRPC methods (mixed into the northbound servicer);
- :class:`JobsClient`, the client's calls (mixed into
  :class:`~controller.northbound.client.ControllerClient`).

A job the book refuses (:class:`~controller.daemon.jobs.JobRejected`) is INVALID_ARGUMENT whose
message starts with the problem's name (``unknown_block: ...``, ``degrees: ...``); an unknown
name to remove is NOT_FOUND; a journal that cannot take the announcement is UNAVAILABLE (the
job is not kept, as for every operator request).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import grpc

from controller.northbound import convert
from controller.northbound.api import ApiError, ApiErrorCode
from controller.northbound.proto.gen.heliostat.controller.v1 import controller_pb2 as pb
from optimizer.errors import HeliostatError
from optimizer.limits import MAX_NAME_CHARS
from optimizer.schema import shown

if TYPE_CHECKING:
    from controller.daemon import Daemon
    from southbound.grpc_native.rpc import RpcCaller

log = logging.getLogger(__name__)

T = TypeVar("T")


@runtime_checkable
class JobsApi(Protocol):
    def add_job(self, text: str, start: float | None = None, end: float | None = None) -> dict[str, Any]:
        """Announce the job file ``text`` starting at ``start`` (Unix seconds; None: now)."""
        ...

    def remove_job(self, name: str) -> str: ...

    def list_jobs(self) -> dict[str, Any]:
        """``{"jobs": [...], "lead_time_s": s, "time": now}``."""
        ...


def jobs_api(api: object) -> JobsApi:
    if not isinstance(api, JobsApi):
        raise ApiError(ApiErrorCode.UNAVAILABLE, "this controller takes no job announcements")
    return api


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise ApiError(ApiErrorCode.INVALID_ARGUMENT,
                       f"name: {shown(name, 40)} is not a job name of 1 to {MAX_NAME_CHARS} characters")
    return name


class DaemonJobs:
    """The daemon's JobsApi, over its :class:`~controller.daemon.jobs.JobBook`."""

    daemon: Daemon

    def add_job(self, text: str, start: float | None = None, end: float | None = None) -> dict[str, Any]:
        from controller.daemon.jobs import JobRejected
        from controller.daemon.leadership import NotLeading
        from controller.reconfig.journal import JournalError

        daemon = self.daemon
        if not isinstance(text, str) or not text.strip():
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, "job_yaml: the job file is empty")
        now = daemon.clock()
        book = daemon.jobs
        try:
            daemon.refuse_unless_leading()
            job = book.add(text, now if start is None else start, end, now, source="job file")
        except JobRejected as exc:
            raise ApiError(ApiErrorCode.INVALID_ARGUMENT, str(exc)) from exc
        except NotLeading as exc:
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, str(exc)) from exc
        except JournalError as exc:
            raise ApiError(ApiErrorCode.UNAVAILABLE,
                           f"not accepted: the job could not be journaled ({exc})") from exc
        except HeliostatError as exc:
            raise ApiError(ApiErrorCode.UNAVAILABLE, str(exc)) from exc
        daemon.wake.set()  # the loop sees at once whether the job is due
        before = daemon.job_comm.note_announced(job, book.jobs(), daemon.routing_in_force(), now)
        return job.to_json(now, book.lead_time, {"announced": before, "now": before})

    def remove_job(self, name: str) -> str:
        from controller.daemon.jobs import JobProblem, JobRejected
        from controller.daemon.leadership import NotLeading
        from controller.reconfig.journal import JournalError

        daemon = self.daemon
        name = _check_name(name)
        try:
            daemon.refuse_unless_leading()
            daemon.jobs.remove(name)
        except JobRejected as exc:
            unknown = exc.problem is JobProblem.UNKNOWN_JOB
            code = ApiErrorCode.NOT_FOUND if unknown else ApiErrorCode.INVALID_ARGUMENT
            raise ApiError(code, str(exc)) from exc
        except NotLeading as exc:
            raise ApiError(ApiErrorCode.FAILED_PRECONDITION, str(exc)) from exc
        except JournalError as exc:
            raise ApiError(ApiErrorCode.UNAVAILABLE, f"not removed: the journal failed ({exc})") from exc
        except HeliostatError as exc:
            raise ApiError(ApiErrorCode.UNAVAILABLE, str(exc)) from exc
        daemon.wake.set()
        return f"job {name} removed; the controller no longer plans for it"

    def list_jobs(self) -> dict[str, Any]:
        daemon = self.daemon
        now = daemon.clock()
        book = daemon.jobs
        jobs = book.jobs()
        comm = daemon.job_comm.figures(jobs, daemon.routing_in_force(), now)
        return {"jobs": [j.to_json(now, book.lead_time, comm.get(j.name)) for j in jobs],
                "lead_time_s": book.lead_time, "time": now}


class JobsRpcs:
    """The servicer's AddJob, RemoveJob and ListJobs (mixed into ControllerServicer)."""

    _api: Any
    _serve: Callable[..., Any]

    def AddJob(self, request: pb.AddJobRequest, context: grpc.ServicerContext) -> pb.AddJobResponse:
        def handle() -> pb.AddJobResponse:
            start = convert.timestamp_from_pb(request, "start_at")
            end = convert.timestamp_from_pb(request, "end_at")
            job = jobs_api(self._api).add_job(request.job_yaml, start, end)
            message = f"job {job['name']} announced ({job['phase']}); journaled"
            return pb.AddJobResponse(message=message, job_json=convert.dump_json(job, "job"))

        result: pb.AddJobResponse = self._serve(context, "AddJob", handle)
        return result

    def RemoveJob(self, request: pb.RemoveJobRequest, context: grpc.ServicerContext) -> pb.RemoveJobResponse:
        def handle() -> pb.RemoveJobResponse:
            return pb.RemoveJobResponse(message=jobs_api(self._api).remove_job(_check_name(request.name)))

        result: pb.RemoveJobResponse = self._serve(context, "RemoveJob", handle)
        return result

    def ListJobs(self, request: pb.ListJobsRequest, context: grpc.ServicerContext) -> pb.ListJobsResponse:
        def handle() -> pb.ListJobsResponse:
            data = jobs_api(self._api).list_jobs()
            return pb.ListJobsResponse(
                jobs_json=[convert.dump_json(j, f"jobs[{i}]") for i, j in enumerate(data["jobs"])],
                lead_time_s=float(data["lead_time_s"]),
            )

        result: pb.ListJobsResponse = self._serve(context, "ListJobs", handle)
        return result


class JobsClient:
    """The client's job calls (mixed into ControllerClient)."""

    _stub: Any
    _reads: RpcCaller
    _actions: RpcCaller
    _call: Callable[..., Any]

    def add_job(self, text: str, start: float | None = None, end: float | None = None) -> dict[str, Any]:
        request = pb.AddJobRequest(job_yaml=text)
        if start is not None:
            convert.timestamp_to_pb(start, request.start_at)
        if end is not None:
            convert.timestamp_to_pb(end, request.end_at)
        reply = self._call(self._actions, self._stub.AddJob, request)
        job: dict[str, Any] = convert.load_json(reply.job_json, "job")
        return job

    def remove_job(self, name: str) -> str:
        reply = self._call(self._actions, self._stub.RemoveJob, pb.RemoveJobRequest(name=_check_name(name)))
        return str(reply.message)

    def list_jobs(self) -> dict[str, Any]:
        reply = self._call(self._reads, self._stub.ListJobs, pb.ListJobsRequest())
        jobs = [convert.load_json(text, f"jobs[{i}]") for i, text in enumerate(reply.jobs_json)]
        return {"jobs": jobs, "lead_time_s": reply.lead_time_s, "time": time.time()}
