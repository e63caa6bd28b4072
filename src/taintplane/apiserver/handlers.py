"""HTTP handlers for resource requests: CRUD, list, watch, patch and the pod subresources.

Each handler turns a request into registry calls and the result into a response; errors are
``APIError`` Statuses all the way out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from taintplane.admission.chain import UserInfo
from taintplane.api.gofmt import go_quote
from taintplane.api.scheme import ResourceType
from taintplane.api.selectors import (
    FieldSelector,
    LabelSelector,
    SelectorError,
    parse_field_selector,
    parse_label_selector,
)
from taintplane.apiserver import codec, fieldmanager, warning
from taintplane.apiserver.auth.reviews import REVIEW_GROUPS, Reviews
from taintplane.apiserver.body_limits import parse_int64
from taintplane.apiserver.codec import clone
from taintplane.apiserver.delete_options import propagation_policy
from taintplane.apiserver.eviction import evict
from taintplane.apiserver.fairness import offload
from taintplane.apiserver.json_patch import (
    JSONPatchApplyError,
    JSONPatchTooLarge,
    PatchedNotAnObject,
    apply_json_patch,
)
from taintplane.apiserver.list_options import ListOptions, validate_list_options
from taintplane.apiserver.patch import (
    PatchError,
    apply_merge_patch_body,
    apply_strategic_merge_patch,
    go_value,
)
from taintplane.apiserver.patch_shape import json_patch_shape, merge_patch_shape
from taintplane.apiserver.pod_streams import STREAM_SUBRESOURCES, serve_stream
from taintplane.apiserver.registry import Apply, Registry, WatchProgress, check_update_name
from taintplane.apiserver.registry_checks import DecodeFailure
from taintplane.apiserver.requestinfo import RequestInfo
from taintplane.apiserver.scale import apply_scale, scale_of
from taintplane.apiserver.scopes import SCOPE_IN_PROCESS
from taintplane.apiserver.status import APIError, success
from taintplane.apiserver.strict_decoding import (
    NO_NOTES,
    DecodeNotes,
    notes_for_body,
    notes_for_patch,
    yaml_duplicates,
)
from taintplane.apiserver.subresources import bind
from taintplane.apiserver.tables import table_for
from taintplane.apiserver.watch_stream import watch_lines
from taintplane.clock import Clock, RealClock

__all__ = ["HANDLED_SUBRESOURCES", "ResourceHandlers", "json_response", "served_verbs"]

#: The subresources these handlers give their own semantics (the registry's writes know
#: status, finalize and binding; eviction and scale have their modules). A subresource in
#: the scheme but not here would be written as an update of the whole object.
HANDLED_SUBRESOURCES = frozenset(
    {"status", "finalize", "binding", "eviction", "scale", *STREAM_SUBRESOURCES}
)


def json_response(body: Any, status: int = 200, content_type: str = "application/json") -> Response:
    response = Response(codec.encode(body), status_code=status, media_type=content_type)
    # Every error Status is written here (the app's dispatch included): like upstream's
    # ErrorNegotiated, one that tells the client when to retry says so in the header too.
    if isinstance(body, dict) and body.get("kind") == "Status":
        details = body.get("details")
        retry = details.get("retryAfterSeconds") if isinstance(details, dict) else None
        if isinstance(retry, int) and retry > 0:
            response.headers["Retry-After"] = str(retry)
    return response


def _converted(request: Request) -> bool:
    """Whether the body was already converted from a served version (``app._converted`` sets
    ``request.state.body``). Read from the scope's state dict: ``hasattr(request.state, …)``
    raises and catches an AttributeError on every request that has none, a measurable
    share of an in-process write."""
    state = request.scope.get("state")
    return isinstance(state, dict) and "body" in state


def _query_int(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return None
    return parse_int64(raw)


_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_FALSE = ("0", "f", "F", "FALSE", "false", "False", "")


def _query_bool(request: Request, name: str) -> bool:
    """A boolean query parameter as Go's strconv.ParseBool reads it."""
    raw = request.query_params.get(name, "")
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise APIError.bad_request(
        f'invalid value for {name}: "{raw}": strconv.ParseBool: parsing "{raw}": invalid syntax'
    )


class ResourceHandlers:
    def __init__(
        self,
        registry: Registry,
        clock: Clock,
        *,
        bookmark_interval: float = 60.0,
        tokens: dict[str, UserInfo] | None = None,
    ) -> None:
        self.registry = registry
        self.clock = clock
        #: The create-only review resources (``tokens``: the ``--auth`` token file).
        self.reviews = Reviews(registry, clock, tokens)
        # Request timeouts (a watch's timeoutSeconds) bound how long an HTTP request is held
        # open, as kube-apiserver's do: they count the wall clock even when the cluster runs
        # on virtual time, or a watch asked to end in a second would wait for the next
        # 'taintplane clock advance' and a client's timeout_seconds would never return.
        self.request_clock: Clock = RealClock()
        self.bookmark_interval = bookmark_interval

    async def handle(self, request: Request, info: RequestInfo) -> Response:
        """Handle one request; the warnings it gathered go back in ``Warning`` headers, on
        an error too (as kube-apiserver's warning recorder writes them with any status)."""
        with warning.recording() as warnings:
            try:
                response = await self._handle(request, info)
            except APIError as error:
                if not warnings:
                    raise
                response = json_response(error.status, error.code)
        warning.write_headers(response, warnings)
        return response

    async def _handle(self, request: Request, info: RequestInfo) -> Response:
        method = request.method
        verb = {
            ("GET", True): "get",
            ("GET", False): "list",
            ("POST", False): "create",
            ("POST", True): "create",
            ("PUT", True): "update",
            ("PATCH", True): "patch",
            ("DELETE", True): "delete",
            ("DELETE", False): "deletecollection",
        }.get((method, bool(info.name)))
        if verb is None or verb not in served_verbs(info):
            # A verb the resource or subresource does not serve (GET on the create-only
            # bindings, PUT on pods/binding, DELETE on a status) is a 405, as the route is
            # never installed: go-restful's 405 through kube-apiserver's serviceErrorHandler
            # (a generic Status, no Allow header).
            raise APIError.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        if (
            info.resource.namespaced
            and not info.namespace
            and verb not in ("list", "deletecollection")
        ):
            raise APIError.make(404, "NotFound", "the server could not find the requested resource")
        if info.subresource == "binding":
            body = await self._body(request)
            bound = await bind(
                self.registry,
                info,
                body,
                dry_run=self._dry_run(request),
                field_validation=self._field_validation(request),
                notes=await self._body_notes(request),
            )
            return json_response(bound, 201)
        if info.resource.kind == "Binding" and not info.resource.group and verb == "create":
            return await self._legacy_binding(request, info)
        if info.resource.group in REVIEW_GROUPS and verb == "create" and not info.name:
            return json_response(await self.reviews.create(request, info), 201)
        if info.subresource == "eviction":
            body = await self._body(request)
            evicted = await evict(
                self.registry,
                info,
                body,
                dry_run_query=self._dry_run(request),
                clock=self.request_clock,
                field_validation=self._field_validation(request),
                notes=await self._body_notes(request),
            )
            return json_response(evicted, 201)
        if info.subresource == "scale":
            return await self._scale(request, info, verb)
        if info.subresource in STREAM_SUBRESOURCES:
            return await serve_stream(self.registry, info, request)
        if verb == "get":
            obj = await self.registry.get(info.resource, info.namespace, info.name)
            return await self._render(request, info.resource, [obj], single=obj)
        if verb == "list":
            if _query_bool(request, "watch"):
                return await self._watch(request, info)
            return await self._list(request, info)
        if verb == "create":
            if info.name:
                raise APIError.method_not_allowed(
                    "the server does not allow this method on the requested resource"
                )
            body = self._require_object(await self._object_body(request, info))
            created = await self.registry.create(
                info.resource,
                info.namespace,
                body,
                dry_run=self._dry_run(request),
                field_validation=self._field_validation(request),
                manager=self._manager(request),
                notes=await self._body_notes(request),
                # decoded for this request alone (a converted body may be read again)
                owned=not _converted(request),
            )
            return json_response(created, 201)
        if verb == "update":
            body = self._require_object(await self._object_body(request, info))
            updated = await self.registry.update(
                info.resource,
                info.namespace,
                info.name,
                body,
                subresource=info.subresource,
                dry_run=self._dry_run(request),
                field_validation=self._field_validation(request),
                manager=self._manager(request),
                notes=await self._body_notes(request),
                owned=not _converted(request),
            )
            return json_response(updated)
        if verb == "patch":
            return await self._patch(request, info)
        if verb == "delete":
            return await self._delete(request, info)
        return await self._delete_collection(request, info)

    async def _legacy_binding(self, request: Request, info: RequestInfo) -> Response:
        """``POST /api/v1/namespaces/NS/bindings``: the pod is the one the Binding names
        (pkg/registry/core/pod/storage: the bindings resource is BindingREST too; the create
        handler takes the name from the object)."""
        body = self._require_object(await self._body(request))
        metadata = body.get("metadata")
        name = str(metadata.get("name") or "") if isinstance(metadata, dict) else ""
        pods = self.registry.scheme.lookup("", "v1", "pods")
        assert pods is not None
        pod_info = RequestInfo(pods, info.namespace, name, "binding")
        bound = await bind(
            self.registry,
            pod_info,
            body,
            dry_run=self._dry_run(request),
            field_validation=self._field_validation(request),
            notes=await self._body_notes(request),
        )
        return json_response(bound, 201)

    # ---- helpers ---------------------------------------------------------------------------

    async def _body(self, request: Request) -> Any:
        if _converted(request):
            return request.state.body  # already converted from a served version (conversion.py)
        raw = await request.body()
        return await offload(codec.decode_body, raw, request.headers.get("content-type"))

    async def _object_body(self, request: Request, info: RequestInfo) -> Any:
        """A create or update body. One the YAML decoder refuses has no kind to read, and
        the handler's transformDecodeError says so: ``the object provided is unrecognized
        (must be of type Node): error converting YAML to JSON: … (<the body's start>)``."""
        try:
            return await self._body(request)
        except codec.UnreadableYAML as error:
            raise APIError.bad_request(
                f"the object provided is unrecognized (must be of type {info.resource.kind}): "
                f"{error.detail} ({codec.summarize(await request.body())})"
            ) from error

    async def _body_notes(self, request: Request) -> DecodeNotes:
        """Duplicate fields in a create or update body (not for a body converted from
        another served version: its raw bytes are not the object's)."""
        if _converted(request) or request.scope.get(SCOPE_IN_PROCESS):
            return NO_NOTES
        return await offload(
            notes_for_body,
            await request.body(),
            codec.media_type(request.headers.get("content-type")),
            self._field_validation(request),
        )

    @staticmethod
    def _require_object(body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise APIError.bad_request("the request body must be a JSON or YAML object")
        return body

    @staticmethod
    def _manager(request: Request) -> str:
        """``fieldManager``, or the client's name from its User-Agent (as kube-apiserver)."""
        manager = request.query_params.get("fieldManager")
        if manager:
            return manager
        agent = request.headers.get("user-agent", "")
        return agent.split("/", 1)[0][:128] or "unknown"

    @staticmethod
    def _field_validation(request: Request) -> str:
        value = request.query_params.get("fieldValidation") or "Warn"
        if value not in ("Ignore", "Warn", "Strict"):
            raise APIError.bad_request(
                f'fieldValidation: Unsupported value: "{value}": '
                'supported values: "Ignore", "Warn", "Strict"'
            )
        return value

    @staticmethod
    def _dry_run(request: Request) -> bool:
        values = request.query_params.getlist("dryRun")
        for value in values:
            if value != "All":
                raise APIError.bad_request(
                    f'dryRun: Unsupported value: "{value}": supported values: "All"'
                )
        return bool(values)

    @staticmethod
    def _selectors(request: Request) -> tuple[LabelSelector | None, FieldSelector | None]:
        try:
            labels = parse_label_selector(request.query_params.get("labelSelector", ""))
            fields = parse_field_selector(request.query_params.get("fieldSelector", ""))
        except SelectorError as error:
            raise APIError.bad_request(error.message) from error
        return (None if labels.is_empty() else labels), (fields if fields.requirements else None)

    @staticmethod
    def _list_options(request: Request, *, watch: bool) -> ListOptions:
        query = request.query_params
        _query_int(request, "timeoutSeconds")  # decoded (and refused) with the rest, as upstream
        send_initial_events = (
            _query_bool(request, "sendInitialEvents") if "sendInitialEvents" in query else None
        )
        options = ListOptions(
            watch=watch,
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
            send_initial_events=send_initial_events,
            continue_token=query.get("continue", ""),
        )
        validate_list_options(options)
        return options

    def _check_fields(self, resource: ResourceType, fields: FieldSelector | None) -> None:
        if fields is None:
            return
        strategy = self.registry.strategy(resource)
        try:
            fields.check_supported(strategy.supports_field, resource.api_version, resource.kind)
        except SelectorError as error:
            raise APIError.bad_request(error.message) from error

    async def _render(
        self,
        request: Request,
        resource: ResourceType,
        objects: list[dict[str, Any]],
        *,
        single: dict[str, Any] | None = None,
        list_meta: dict[str, Any] | None = None,
    ) -> Response:
        if codec.wants_table(request.headers.get("accept")):
            include = request.query_params.get("includeObject", "Metadata")
            table = await offload(
                table_for,
                resource,
                objects,
                self.clock.now(),
                include_object=include,
                list_meta=list_meta
                or ({"resourceVersion": single["metadata"]["resourceVersion"]} if single else {}),
            )
            return json_response(table, content_type="application/json;as=Table;v=v1;g=meta.k8s.io")
        if single is not None:
            return json_response(single)
        body = {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version,
            "metadata": list_meta or {},
            "items": objects,
        }
        return json_response(body)

    async def _list(self, request: Request, info: RequestInfo) -> Response:
        options = self._list_options(request, watch=False)
        labels, fields = self._selectors(request)
        self._check_fields(info.resource, fields)
        limit = max(_query_int(request, "limit") or 0, 0)
        continue_token = options.continue_token or None
        resource_version = options.resource_version
        match = options.resource_version_match
        if (
            labels is None
            and fields is None
            and not codec.wants_table(request.headers.get("accept"))
        ):
            # The large lists (informers, -o json) go out without decoding a single object.
            raw = await self.registry.list_raw_page(
                info.resource,
                info.namespace,
                limit=limit,
                continue_token=continue_token,
                resource_version=resource_version,
                resource_version_match=match,
            )
            head = codec.encode(
                {
                    "kind": info.resource.list_kind,
                    "apiVersion": info.resource.api_version,
                    "metadata": raw.list_meta(),
                }
            )
            body = head[:-1] + b',"items":[' + b",".join(raw.items) + b"]}"
            return Response(body, media_type="application/json")
        page = await self.registry.list(
            info.resource,
            info.namespace,
            labels=labels,
            fields=fields,
            limit=limit,
            continue_token=continue_token,
            resource_version=resource_version,
            resource_version_match=match,
        )
        return await self._render(request, info.resource, page.items, list_meta=page.list_meta())

    # ---- patch -----------------------------------------------------------------------------

    async def _patch(self, request: Request, info: RequestInfo) -> Response:
        content_type = codec.media_type(request.headers.get("content-type"))
        if content_type not in codec.PATCH_TYPES:
            raise APIError.unsupported_media_type(content_type)
        notes = DecodeNotes(sorted_walk=True)
        apply_duplicates: list[str] = []
        if _converted(request):
            patch = request.state.body
        else:
            raw = await request.body()
            patch = await offload(
                codec.decode_body,
                raw,
                "application/yaml" if content_type.endswith("yaml") else "application/json",
            )
            if request.scope.get(SCOPE_IN_PROCESS):
                pass  # serialized from dicts by our own client: no key can appear twice
            elif content_type != "application/apply-patch+yaml":
                validation = self._field_validation(request)
                notes = await offload(notes_for_patch, raw, content_type, validation)
            elif self._field_validation(request) != "Ignore":
                apply_duplicates = await offload(yaml_duplicates, raw.decode("utf-8", "replace"))
        dry_run = self._dry_run(request)
        if content_type == "application/apply-patch+yaml":
            return await self._apply(request, info, patch, dry_run, apply_duplicates)

        patched: list[dict[str, Any]] = []

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            patched[:] = [apply_patch(content_type, current, patch)]
            # handlers/patch.go applyPatch: the patched object is still the URL's.
            check_update_name(
                patched[0], info.name, info.namespace, namespaced=info.resource.namespaced
            )
            return patched[0]

        try:
            updated = await self.registry.guaranteed_update(
                info.resource,
                info.namespace,
                info.name,
                mutate,
                subresource=info.subresource,
                dry_run=dry_run,
                field_validation=self._field_validation(request),
                manager=self._manager(request),
                notes=notes,
                touched=(
                    json_patch_shape(patch)
                    if content_type == "application/json-patch+json"
                    else merge_patch_shape(patch)
                ),
            )
        except DecodeFailure as error:
            # handlers/patch.go: the patched object that does not decode is the patch's
            # fault, a 422 naming the patch (the patch map for a strategic merge patch, the
            # patched object's JSON for the others).
            strategic = content_type == "application/strategic-merge-patch+json"
            value = go_value(patch) if strategic else codec.encode(patched[0]).decode()
            raise _patch_invalid(value, error.detail) from error
        return json_response(updated)

    async def _scale(self, request: Request, info: RequestInfo, verb: str) -> Response:
        """GET, PUT or PATCH the workload's Scale; writes go to ``spec.replicas``."""
        if verb == "get":
            obj = await self.registry.get(info.resource, info.namespace, info.name)
            return json_response(scale_of(obj))
        change: Callable[[dict[str, Any]], dict[str, Any]]
        if verb == "update":
            body = self._require_object(await self._body(request))
            check_update_name(body, info.name, info.namespace, namespaced=True)

            def replace(_: dict[str, Any]) -> dict[str, Any]:
                return body

            change = replace
        elif verb == "patch":
            content_type = codec.media_type(request.headers.get("content-type"))
            patch = codec.decode_body(await request.body(), "application/json")

            def patched(current: dict[str, Any]) -> dict[str, Any]:
                return apply_patch(content_type, current, patch)

            change = patched
        else:
            raise APIError.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        updated = await self.registry.guaranteed_update(
            info.resource,
            info.namespace,
            info.name,
            apply_scale(info.name, change),
            dry_run=self._dry_run(request),
            manager=self._manager(request),
        )
        return json_response(scale_of(updated))

    async def _apply(
        self,
        request: Request,
        info: RequestInfo,
        patch: Any,
        dry_run: bool,
        duplicates: list[str],
    ) -> Response:
        """Server-side apply: create the object if missing; otherwise refuse conflicting
        changes to fields other managers own (unless ``force``), drop the fields this manager
        applied before and no longer names, and merge the configuration in. Keys the
        configuration sets twice (go-yaml's ``duplicates``) are an error under
        ``fieldValidation=Strict`` and warnings otherwise (handlers/patch.go, applyPatcher)."""
        config = self._require_object(patch)
        manager = request.query_params.get("fieldManager") or ""
        if not manager:
            raise APIError.bad_request(
                "PATCH requests with apply patches must specify a fieldManager"
            )
        if duplicates and self._field_validation(request) == "Strict":
            raise APIError.bad_request(
                "error strict decoding YAML: error converting YAML to JSON: "
                "yaml: unmarshal errors:\n  " + "\n  ".join(duplicates)
            )
        for text in duplicates:
            warning.add(text)
        force = _query_bool(request, "force")
        skip_status = self.registry.strategy(info.resource).has_status and not info.subresource
        raw_meta = config.get("metadata")
        config_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        if config_meta.get("name") not in (None, info.name):
            raise APIError.bad_request(
                f"the name of the object ({config_meta.get('name')}) does not match the name on "
                f"the URL ({info.name})"
            )
        try:
            live = await self.registry.get(info.resource, info.namespace, info.name)
        except APIError as error:
            if error.code != 404:
                raise
            body = clone(config)
            body.setdefault("metadata", {})["name"] = info.name
            created = await self.registry.create(
                info.resource,
                info.namespace,
                body,
                dry_run=dry_run,
                field_validation=self._field_validation(request),
                manager=manager,
                apply=Apply(config, force),
            )
            return json_response(created, 201)
        conflicts = fieldmanager.apply_conflicts(live, config, manager, skip_status=skip_status)
        if conflicts and not force:
            group_version = "/".join(p for p in (info.resource.group, info.resource.version) if p)
            conflicts = fieldmanager.conflicts_left_by_last_applied(
                live, conflicts, manager, group_version, skip_status=skip_status
            )
            # Conflicts the annotation allowed are taken over, as a forced apply takes them.
            force = not conflicts
        if conflicts and not force:
            causes = [
                {
                    "reason": "FieldManagerConflict",
                    "message": f'conflict with "{c.manager}"'
                    + (f" using {c.api_version}" if c.api_version else ""),
                    "field": fieldmanager.render_path(c.path),
                }
                for c in conflicts
            ]
            raise APIError.make(
                409, "Conflict", fieldmanager.conflict_message(conflicts), {"causes": causes}
            )
        applied = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
        named = set(fieldmanager.fields_of(config, skip_status=skip_status))

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            # Fields this manager applied before, no longer names, and nobody else owns go.
            fieldmanager.prune(current, manager, named)
            try:
                return apply_strategic_merge_patch(current, applied)
            except PatchError as error:
                raise APIError.bad_request(error.message) from error

        updated = await self.registry.guaranteed_update(
            info.resource,
            info.namespace,
            info.name,
            mutate,
            subresource=info.subresource,
            dry_run=dry_run,
            field_validation=self._field_validation(request),
            manager=manager,
            apply=Apply(config, force),
            touched=merge_patch_shape(applied),
        )
        return json_response(updated)

    # ---- delete ----------------------------------------------------------------------------

    async def _delete_options(self, request: Request) -> dict[str, Any]:
        options = await self._body(request)
        options = options if isinstance(options, dict) else {}
        grace = _query_int(request, "gracePeriodSeconds")
        if grace is not None:
            options["gracePeriodSeconds"] = grace
        policy = request.query_params.get("propagationPolicy")
        if policy is not None:
            options["propagationPolicy"] = policy
        orphan = request.query_params.get("orphanDependents")
        if orphan is not None:
            # runtime.Convert_Slice_string_To_Pointer_bool: anything but 0/false is true
            # (the Python client sends "True").
            options["orphanDependents"] = orphan.lower() not in ("0", "false")
        return options

    async def _delete(self, request: Request, info: RequestInfo) -> Response:
        options = await self._delete_options(request)
        obj, gone = await self.registry.delete(
            info.resource,
            info.namespace,
            info.name,
            grace_period=options.get("gracePeriodSeconds"),
            preconditions=options.get("preconditions"),
            dry_run=self._dry_run(request),
            propagation=propagation_policy(options),
        )
        if gone and not info.resource.return_deleted_object:
            details: dict[str, Any] = {"name": info.name}
            if info.resource.group:
                details["group"] = info.resource.group
            details["kind"] = info.resource.plural
            details["uid"] = obj["metadata"].get("uid")
            return json_response(success(200, details))
        # Upstream answers 202 only for a deletion left pending when the client asked for
        # cascading with the deprecated orphanDependents=false (changing it would break
        # clients); finalizers, grace periods and namespaces otherwise answer 200.
        pending_cascade = not gone and options.get("orphanDependents") is False
        return json_response(obj, 202 if pending_cascade else 200)

    async def _delete_collection(self, request: Request, info: RequestInfo) -> Response:
        options = await self._delete_options(request)
        propagation = propagation_policy(options)  # ValidateDeleteOptions before listing
        labels, fields = self._selectors(request)
        self._check_fields(info.resource, fields)
        page = await self.registry.list(info.resource, info.namespace, labels=labels, fields=fields)
        deleted = []
        for obj in page.items:
            try:
                result, _ = await self.registry.delete(
                    info.resource,
                    obj["metadata"].get("namespace", ""),
                    obj["metadata"]["name"],
                    grace_period=options.get("gracePeriodSeconds"),
                    dry_run=self._dry_run(request),
                    propagation=propagation,
                )
            except APIError as error:
                if error.code == 404:
                    continue
                raise
            deleted.append(result)
        return json_response(
            {
                "kind": info.resource.list_kind,
                "apiVersion": info.resource.api_version,
                "metadata": {"resourceVersion": page.resource_version},
                "items": deleted,
            }
        )

    # ---- watch -----------------------------------------------------------------------------

    async def _watch(self, request: Request, info: RequestInfo) -> Response:
        options = self._list_options(request, watch=True)
        labels, fields = self._selectors(request)
        self._check_fields(info.resource, fields)
        timeout = _query_int(request, "timeoutSeconds")
        bookmarks = _query_bool(request, "allowWatchBookmarks")
        table = codec.wants_table(request.headers.get("accept"))
        progress = WatchProgress()
        events = self.registry.watch(
            info.resource,
            info.namespace,
            resource_version=options.resource_version,
            labels=labels,
            fields=fields,
            progress=progress,
            send_initial_events=options.send_initial_events,
            # The bookmark that ends a watch-list's initial events goes only to a client that
            # allows bookmarks (the cacher's watch-list contract).
            initial_events_end=bookmarks and bool(options.send_initial_events),
        )
        stream = watch_lines(
            info.resource,
            events,
            progress,
            self.clock,
            request_clock=self.request_clock,
            table=table,
            bookmark_interval=self.bookmark_interval if bookmarks else None,
            timeout=timeout,
            include=request.query_params.get("includeObject", "Metadata"),
            repeat_bookmarks=not request.scope.get(SCOPE_IN_PROCESS),
        )
        content_type = (
            "application/json;as=Table;v=v1;g=meta.k8s.io" if table else "application/json"
        )
        return StreamingResponse(stream, media_type=content_type)


def served_verbs(info: RequestInfo) -> tuple[str, ...]:
    """The verbs the addressed resource or subresource serves (the scheme's table, which
    discovery publishes too): anything else has no route."""
    if not info.subresource:
        return info.resource.verbs
    for subresource in info.resource.subresources:
        if subresource.name == info.subresource:
            return subresource.verbs
    return ()


def _patch_invalid(value: str, detail: str) -> APIError:
    """errors.NewInvalid(schema.GroupKind{}, "", field.Invalid(field.NewPath("patch"), …)):
    no kind and no name, so the message starts with Go's empty GroupKind and ``""``."""
    body = f"Invalid value: {go_quote(value)}: {detail}"
    return APIError.make(
        422,
        "Invalid",
        f' "" is invalid: patch: {body}',
        {"causes": [{"reason": "FieldValueInvalid", "message": body, "field": "patch"}]},
    )


def apply_patch(content_type: str, current: dict[str, Any], patch: Any) -> dict[str, Any]:
    """A JSON, merge or strategic merge patch applied to ``current`` (the private copy that
    ``guaranteed_update`` hands its mutation, so it is patched in place); a patch that does not
    decode is a 400, as kube-apiserver answers (handlers/patch.go, applyJSPatch)."""
    try:
        if content_type == "application/json-patch+json":
            return apply_json_patch(current, patch, consume_original=True)
        if content_type == "application/merge-patch+json":
            return apply_merge_patch_body(current, patch, consume_original=True)
        return apply_strategic_merge_patch(current, patch, consume_original=True)
    except JSONPatchApplyError as error:
        # NewGenericServerResponse(422, …, isUnexpectedResponse=false): the library's reason
        # is not sent, and the details stay empty.
        status = APIError.make(
            422, "Invalid", "the server rejected our request due to an error in our request"
        ).status
        del status["code"]
        raise APIError({**status, "details": {}, "code": 422}) from error
    except JSONPatchTooLarge as error:
        raise APIError.too_large(error.message) from error
    except PatchedNotAnObject as error:
        raise _patch_invalid(error.patched_json, error.message) from error
    except PatchError as error:
        raise APIError.bad_request(error.message) from error
