"""Generic storage of API objects over a ``Store``: what every resource has in common.

Objects are plain JSON dicts. On the way in, the registry fills in system metadata (uid,
creationTimestamp, generation), applies the kind's strategy (defaults, what a request may
change, validation; ``registry_checks``) and writes through the store with the right
precondition. Reads, lists and watches are ``registry_reads``. It knows nothing about HTTP:
the handlers translate requests into these calls.
"""

from __future__ import annotations

import os
import random
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import orjson

from taintplane.api.decoding import format_time
from taintplane.api.features import FeatureGates
from taintplane.api.scheme import SCHEME, ResourceType, Scheme
from taintplane.apiserver.codec import clone
from taintplane.apiserver.fairness import LARGE_OBJECT_BYTES, offload, offloading
from taintplane.apiserver.fieldmanager import managed_fields_base
from taintplane.apiserver.patch_shape import Shape
from taintplane.apiserver.registry_batch import current_group
from taintplane.apiserver.registry_checks import (
    Apply,
    check_type,
    record_fields,
    run_strategy,
    validate,
)
from taintplane.apiserver.registry_reads import (
    ListPage,
    RegistryReads,
    WatchItem,
    WatchProgress,
)
from taintplane.apiserver.status import APIError, from_store_error
from taintplane.apiserver.strategies.base import meta
from taintplane.apiserver.strict_decoding import NO_NOTES, DecodeNotes
from taintplane.clock import Clock
from taintplane.store import errors as store_errors
from taintplane.store.batch import Write
from taintplane.store.interface import Store

__all__ = [
    "IMMORTAL_NAMESPACES",
    "Admit",
    "Apply",
    "ListPage",
    "Registry",
    "WatchItem",
    "WatchProgress",
    "check_update_name",
]

#: The namespaces NamespaceLifecycle admission never lets be deleted (kube-node-lease may be).
IMMORTAL_NAMESPACES = ("default", "kube-system", "kube-public")

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_FIELDS = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds")

#: Names and uids need to be unique, not secret: a generator seeded once from the OS, because
#: reading the OS's randomness per object (uuid4, secrets) was 5 % of a create on this host.
_UNIQUE = random.Random(os.urandom(32))

#: An admission hook, one per phase: (operation, resource, namespace, new object or None,
#: old or None, subresource or "").
Admit = Callable[
    [str, ResourceType, str, dict[str, Any] | None, dict[str, Any] | None, str], Awaitable[None]
]


async def _admit_nothing(*_: object) -> None:
    return None


class _LostRace(Exception):
    """Another writer changed the object between a deletion's read and its write."""


class Registry(RegistryReads):
    """Reads (``RegistryReads``) and the writes: create, update, delete."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        features: FeatureGates | None = None,
        scheme: Scheme = SCHEME,
        admit: Admit = _admit_nothing,
        validate_admission: Admit = _admit_nothing,
    ) -> None:
        super().__init__(store, clock, features, scheme)
        #: Admission's mutating phase, then its validating phase (after the strategy's checks).
        self.admit = admit
        self.validate_admission = validate_admission

    # ---- create ----------------------------------------------------------------------------

    async def create(
        self,
        resource: ResourceType,
        namespace: str,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
        apply: Apply | None = None,
        notes: DecodeNotes = NO_NOTES,
        owned: bool = False,
    ) -> dict[str, Any]:
        """``owned``: the caller hands ``body`` over (a request body it decoded and no
        longer reads), so it is changed in place rather than copied first."""
        obj: dict[str, Any] = body if owned else await offload(clone, body)
        await offload(check_type, resource, obj, field_validation, notes=notes)
        metadata = meta(obj)
        if resource.namespaced:
            if metadata.get("namespace") and metadata["namespace"] != namespace:
                raise APIError.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            metadata["namespace"] = namespace
        if metadata.get("resourceVersion"):
            raise APIError.bad_request("resourceVersion should not be set on objects to be created")
        strategy = self.strategy(resource)
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            metadata.pop(field, None)
        # Who set what is recorded once the object is final, from the entries the request
        # sets if they decode (upstream's fieldmanager on create).
        sent_managed_fields = metadata.pop("managedFields", None)
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        await offload(run_strategy, resource, lambda: strategy.default(obj))
        if resource.namespaced:
            requested = metadata.get("name") or metadata.get("generateName") or ""
            await self._check_namespace_open(resource, namespace, str(requested))
        # Upstream's order: mutating admission in the create handler, then the store's Create
        # (system fields, the generated name, BeforeCreate: PrepareForCreate and the strategy's
        # validation), then validating admission on the finished object. So a mutating
        # plugin's refusal of a generateName object names the prefix.
        await self.admit("CREATE", resource, namespace, obj, None, "")
        metadata["uid"] = str(uuid.UUID(int=_UNIQUE.getrandbits(128), version=4))
        metadata["creationTimestamp"] = format_time(self.clock.now())
        generated = not metadata.get("name") and bool(metadata.get("generateName"))
        if generated:
            metadata["name"] = _generate_name(str(metadata["generateName"]))
        name = str(metadata.get("name") or "")
        strategy.prepare_for_create(obj)
        await offload(validate, resource, name, lambda: strategy.validate(obj))
        await self.validate_admission("CREATE", resource, namespace, obj, None, "")
        base = managed_fields_base(sent_managed_fields, None, from_request=apply is None)
        if base:
            metadata["managedFields"] = base
        await self._record_fields(resource, obj, None, manager, apply, "")
        if dry_run:
            return obj
        # A generated name that is taken is generated again, up to 8 tries in all, as
        # kube-apiserver does since RetryGenerateName (GA in 1.32); then the 409 stands.
        for attempt in range(_GENERATE_NAME_TRIES if generated else 1):
            try:
                revision = await self._store_write(
                    Write("create", self._key(resource, namespace, name), self._encode(obj))
                )
                break
            except store_errors.AlreadyExists as error:
                if not generated:
                    raise from_store_error(error, resource, name) from error
                if attempt == _GENERATE_NAME_TRIES - 1:
                    raise APIError.generate_name_conflict(resource, name) from error
                name = metadata["name"] = _generate_name(str(metadata["generateName"]))
            except store_errors.StoreError as error:
                raise from_store_error(error, resource, name) from error
        self._written(resource)
        metadata["resourceVersion"] = str(revision)
        return obj

    async def _check_namespace_open(
        self, resource: ResourceType, namespace: str, name: str
    ) -> None:
        if namespace in self._open_namespaces:
            return
        ns_type = self.scheme.lookup("", "v1", "namespaces")
        assert ns_type is not None
        kv = await self.store.get(self._key(ns_type, "", namespace))
        if kv is None:
            raise APIError.not_found(ns_type, namespace)
        if (self._decode(kv).get("status") or {}).get("phase") == "Terminating":
            # NamespaceLifecycle admission: admission.NewForbidden names an object without a
            # name yet "Unknown", and the Status carries a NamespaceTerminating cause.
            refusal = APIError.forbidden(
                resource,
                name or "Unknown",
                f"unable to create new content in namespace {namespace} because it is being "
                "terminated",
            )
            refusal.status["details"]["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise refusal
        self._open_namespaces.add(namespace)

    # ---- update ----------------------------------------------------------------------------

    async def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
        notes: DecodeNotes = NO_NOTES,
        owned: bool = False,
    ) -> dict[str, Any]:
        new: dict[str, Any] = body if owned else clone(body)  # ``owned``: as for create
        # The stored object is read first so that the type check skips the parts the body
        # leaves as stored (a status write sends the whole object back): they were checked
        # when written, and only the same JSON is skipped. Duplicate fields are found where
        # the walk meets them, so a body with any is checked whole. A missing object is
        # checked whole too, and its 404 comes after the body's own 400, as upstream's
        # decode comes before the read.
        kv = None if notes.inline else await self.store.get(self._key(resource, namespace, name))
        stored = self._decode(kv) if kv is not None else None
        await offload(
            check_type,
            resource,
            new,
            field_validation,
            baseline=stored,
            notes=notes,
            exact_baseline=True,
        )
        check_update_name(new, name, namespace, namespaced=resource.namespaced)
        precondition = meta(new).get("resourceVersion") or None
        # A write that loses a race is tried again from the checked body (the write
        # itself changes the object it is given).
        checked = clone(new) if precondition is None else new
        while True:
            # The first round writes over the object just read (a write landing since is
            # a lost race or a conflict, as one landing during the round).
            old = stored if stored is not None else await self.get(resource, namespace, name)
            stored = None
            if precondition is not None and precondition != meta(old)["resourceVersion"]:
                raise from_store_error(store_errors.Conflict(name, 0), resource, name)
            try:
                # An update without a resourceVersion is unconditional: a write that lands
                # between the read and ours is no conflict of the client's, so it is read
                # again (upstream's GuaranteedUpdate with AllowUnconditionalUpdate).
                return await self._write_update(
                    resource,
                    namespace,
                    name,
                    new,
                    old,
                    subresource,
                    dry_run,
                    manager,
                    None,
                    raced=_LostRace if precondition is None else None,
                )
            except _LostRace:
                new = clone(checked)

    async def guaranteed_update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], dict[str, Any]],
        *,
        subresource: str = "",
        dry_run: bool = False,
        field_validation: str = "Warn",
        manager: str = "",
        apply: Apply | None = None,
        notes: DecodeNotes = NO_NOTES,
        touched: Shape = None,
    ) -> dict[str, Any]:
        """Read, ``mutate`` a copy, write; read and mutated again whenever another write
        lands in between, for as long as that happens, as etcd3's GuaranteedUpdate loops (a
        conflict means someone else's write succeeded, so the cluster always progresses).
        The copy has the current resourceVersion, as the object a patch applies to does
        upstream: a result with another one (a patch that sets it) names the version the
        caller expects, and answers 409 unless that is the current one (on a retry, it no
        longer is). Refusals from admission or validation are not retried. ``touched`` is
        the shape of the patch ``mutate`` applies (``patch_shape``): the parts it names are
        type-checked even where they equal the stored ones (``1`` for ``true``), as upstream
        decodes the whole patched object."""
        while True:
            kv = await self._get_kv(resource, namespace, name)
            old = self._decode(kv)
            # The mutation gets its own copy (decoded again: cheaper than copying ``old``);
            # stored bytes have no resourceVersion, so it is put back.
            current: dict[str, Any] = orjson.loads(kv.value)
            current.setdefault("metadata", {})["resourceVersion"] = meta(old)["resourceVersion"]
            # A large object makes a small request expensive: its work leaves the event loop.
            with offloading(len(kv.value) > LARGE_OBJECT_BYTES):
                new = await offload(mutate, current)
                await offload(
                    check_type,
                    resource,
                    new,
                    field_validation,
                    baseline=old,
                    notes=notes,
                    touched=touched,
                )
                expected = meta(new).get("resourceVersion")
                if expected and expected != meta(old)["resourceVersion"]:
                    raise from_store_error(store_errors.Conflict(name, 0), resource, name)
                try:
                    return await self._write_update(
                        resource,
                        namespace,
                        name,
                        new,
                        old,
                        subresource,
                        dry_run,
                        manager,
                        apply,
                        raced=_LostRace,
                    )
                except _LostRace:
                    continue

    async def _write_update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        new: dict[str, Any],
        old: dict[str, Any],
        subresource: str,
        dry_run: bool,
        manager: str,
        apply: Apply | None,
        *,
        raced: type[Exception] | None = None,
    ) -> dict[str, Any]:
        """Validate and write ``new`` over ``old``. A store conflict (another write landed
        since ``old`` was read) raises ``raced`` when given, for the caller to read again;
        otherwise it is the client's 409."""
        strategy = self.strategy(resource)
        new_meta, old_meta = meta(new), meta(old)
        new_meta["name"] = name
        if resource.namespaced:
            new_meta["namespace"] = namespace
        for field in _SYSTEM_FIELDS:
            if field in old_meta:
                new_meta[field] = old_meta[field]
            else:
                new_meta.pop(field, None)
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        # An apply's record compares the merged object with the live one, as the field
        # manager does before defaulting and admission: what the merge and its pruning
        # changed (a pruned default that defaulting puts back included).
        merged = clone(new) if apply is not None else None
        await offload(run_strategy, resource, lambda: strategy.default(new))
        # Upstream's order, as for create: mutating admission runs in the update handler's
        # objInfo.UpdatedObject, before the store's BeforeUpdate (PrepareForUpdate, which
        # counts the generation, then the strategy's validation); validating admission last.
        # So the generation is decided on the admitted object: a patch that DefaultToleration
        # Seconds undoes leaves the spec, and the generation, as they were.
        await self.admit("UPDATE", resource, namespace, new, old, subresource)
        if subresource == "status":
            strategy.prepare_for_status_update(new, old)
            check = strategy.validate_status_update
        elif subresource == "finalize":
            # namespaces/finalize (upstream's FinalizeStrategy): spec.finalizers and metadata
            # may change, the status stays.
            new["status"] = old.get("status") or {}
            check = strategy.validate_update
        elif subresource == "binding":
            # Binding sets spec.nodeName and a status condition: its own rules, checked by
            # the caller, and neither the spec nor the status update rules apply.
            def check(new: dict[str, Any], old: dict[str, Any]) -> list[Any]:
                return []
        elif not subresource:
            strategy.prepare_for_update(new, old)
            check = strategy.validate_update
        else:
            # Fail closed: a subresource without rules of its own must not write the object.
            raise APIError.method_not_allowed(
                "the server does not allow this method on the requested resource"
            )
        await offload(validate, resource, name, lambda: check(new, old))
        await self.validate_admission("UPDATE", resource, namespace, new, old, subresource)
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        # The record of who set what starts from the live entries, or from those the request
        # sets (not through an apply or a subresource): upstream's decodeLiveOrNew.
        base = managed_fields_base(
            new_meta.get("managedFields"),
            old_meta.get("managedFields"),
            from_request=apply is None and not subresource,
        )
        if base:
            new_meta["managedFields"] = base
        else:
            new_meta.pop("managedFields", None)
        if new == old and apply is None:
            # A no-op update does not write (and keeps the resourceVersion); an apply that
            # changes no value still records its applier (a new co-owner is a write).
            return old
        await self._record_fields(resource, new, old, manager, apply, subresource, merged)
        if _without_times(new) == _without_times(old):
            return old  # a no-op update does not write (and keeps the resourceVersion)
        if dry_run:
            return new
        key = self._key(resource, namespace, name)
        if (
            old_meta.get("deletionTimestamp")
            and not new_meta.get("finalizers")
            and not int(old_meta.get("deletionGracePeriodSeconds") or 0)
            and not _spec_finalizers(resource, new)
        ):
            # An object being deleted with no finalizer left goes now — once its grace period
            # is over (upstream's shouldDeleteDuringUpdate): a pod still terminating gracefully
            # stays for its kubelet's status updates and final deletion; a namespace also
            # waits for its spec.finalizers (ShouldDeleteNamespaceDuringUpdate).
            await self._delete_now(
                resource, namespace, name, key, int(old_meta["resourceVersion"]), raced=raced
            )
            return new
        try:
            revision = await self._store_write(
                Write("update", key, self._encode(new), int(old_meta["resourceVersion"]))
            )
        except store_errors.Conflict as error:
            if raced is not None:
                raise raced from error
            raise from_store_error(error, resource, name) from error
        except store_errors.StoreError as error:
            raise from_store_error(error, resource, name) from error
        self._written(resource)
        new_meta["resourceVersion"] = str(revision)
        return new

    # ---- delete ----------------------------------------------------------------------------

    async def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        *,
        grace_period: int | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        propagation: str | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Delete, or start a graceful deletion. Returns the object and whether it is gone.

        A namespace's deletion only starts its termination (phase Terminating): the namespace
        controller empties it and removes its ``kubernetes`` spec finalizer through the
        finalize subresource, and the update that leaves no finalizer deletes it.

        ``propagation`` Orphan or Foreground puts the garbage collector's finalizer on the
        object (``orphan`` / ``foregroundDeletion``), so it stays until the collector has
        orphaned or deleted its dependents; Background (the default) deletes it now and lets
        the collector find the dependents.

        A write by someone else between reading the object and writing it does not fail the
        request: it is read again and the deletion decided anew (GuaranteedUpdate), so only
        the caller's own preconditions can answer 409."""
        if resource.kind == "Namespace" and not resource.group and name in IMMORTAL_NAMESPACES:
            # NamespaceLifecycle admission refuses before anything is read.
            raise APIError.forbidden(resource, name, "this namespace may not be deleted")
        while True:
            try:
                return await self._delete_once(
                    resource,
                    namespace,
                    name,
                    grace_period=grace_period,
                    preconditions=preconditions,
                    dry_run=dry_run,
                    propagation=propagation,
                )
            except _LostRace:
                continue

    async def _delete_once(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        *,
        grace_period: int | None,
        preconditions: dict[str, Any] | None,
        dry_run: bool,
        propagation: str | None,
    ) -> tuple[dict[str, Any], bool]:
        obj = await self.get(resource, namespace, name)
        metadata = meta(obj)
        preconditions = preconditions or {}
        if preconditions.get("uid") and preconditions["uid"] != metadata.get("uid"):
            raise APIError.conflict(
                resource,
                name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                f"UID in object meta: {metadata.get('uid')}",
            )
        if (
            preconditions.get("resourceVersion")
            and preconditions["resourceVersion"] != metadata["resourceVersion"]
        ):
            raise APIError.conflict(
                resource,
                name,
                f"Precondition failed: ResourceVersion in precondition: "
                f"{preconditions['resourceVersion']}, ResourceVersion in object meta: "
                f"{metadata['resourceVersion']}",
            )
        await self.admit("DELETE", resource, namespace, None, obj, "")
        await self.validate_admission("DELETE", resource, namespace, None, obj, "")
        grace = self.strategy(resource).grace_period_seconds(obj, grace_period)
        was_deleting = bool(metadata.get("deletionTimestamp"))
        gc_finalizer = {"Orphan": "orphan", "Foreground": "foregroundDeletion"}.get(
            propagation or ""
        )
        if propagation is not None:
            kept = [
                f
                for f in metadata.get("finalizers") or []
                if f not in ("orphan", "foregroundDeletion")
            ]
            if gc_finalizer is not None:
                kept.append(gc_finalizer)
            if kept != (metadata.get("finalizers") or []):
                if kept:
                    metadata["finalizers"] = kept
                else:
                    metadata.pop("finalizers", None)
                if metadata.get("deletionTimestamp"):
                    # Already being deleted: only the garbage collection policy changes.
                    grace = max(grace, int(metadata.get("deletionGracePeriodSeconds") or 0))
                    metadata.pop("deletionTimestamp")
        finalizers = [*(metadata.get("finalizers") or []), *_spec_finalizers(resource, obj)]
        if grace > 0 or finalizers:
            if metadata.get("deletionTimestamp") and grace >= int(
                metadata.get("deletionGracePeriodSeconds") or 0
            ):
                return obj, False  # already being deleted, no sooner than now
            if dry_run:
                return obj, False
            metadata["deletionTimestamp"] = format_time(self.clock.now() + timedelta(seconds=grace))
            if resource.kind != "Namespace":  # upstream's namespace Delete sets no grace
                metadata["deletionGracePeriodSeconds"] = grace
            if not was_deleting and int(metadata.get("generation") or 0) > 0:
                # Controllers act differently on an object being deleted: a new generation
                # (BeforeDelete for graceful deletion, markAsDeleting for finalizers).
                metadata["generation"] = int(metadata["generation"]) + 1
            if resource.kind == "Namespace":
                obj.setdefault("status", {})["phase"] = "Terminating"
            key = self._key(resource, namespace, name)
            try:
                revision = await self._store_write(
                    Write("update", key, self._encode(obj), int(metadata["resourceVersion"]))
                )
            except store_errors.Conflict as error:
                raise _LostRace from error
            except store_errors.StoreError as error:
                raise from_store_error(error, resource, name) from error
            self._written(resource)
            metadata["resourceVersion"] = str(revision)
            return obj, False
        if dry_run:
            return obj, True
        key = self._key(resource, namespace, name)
        revision = await self._delete_now(
            resource, namespace, name, key, int(metadata["resourceVersion"]), raced=_LostRace
        )
        metadata["resourceVersion"] = str(revision)
        return obj, True

    async def _delete_now(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        key: str,
        expected: int,
        *,
        raced: type[Exception] | None = None,
    ) -> int:
        """Delete ``key`` at revision ``expected``; a changed object raises ``raced`` when
        given (the caller reads it again), 409 otherwise."""
        try:
            revision, _ = await self._store_write(Write("delete", key, b"", expected))
        except store_errors.Conflict as error:
            if raced is not None:
                raise raced from error
            raise from_store_error(error, resource, name) from error
        except store_errors.StoreError as error:
            raise from_store_error(error, resource, name) from error
        self._written(resource)
        return int(revision)

    async def _store_write(self, write: Write) -> Any:
        """One store write, or, for a request of a batch, its place in the batch's
        transaction (``registry_batch``): the same result or store error either way."""
        group = current_group()
        if group is not None:
            return await group.write(write)
        if write.kind == "create":
            return await self.store.create(write.key, write.value)
        if write.kind == "update":
            assert write.expected_revision is not None
            return await self.store.update(write.key, write.value, write.expected_revision)
        return await self.store.delete(write.key, write.expected_revision)

    async def _record_fields(
        self,
        resource: ResourceType,
        new: dict[str, Any],
        old: dict[str, Any] | None,
        manager: str,
        apply: Apply | None,
        subresource: str,
        merged: dict[str, Any] | None = None,
    ) -> None:
        await offload(
            record_fields,
            self.clock,
            resource,
            new,
            old,
            manager=manager,
            apply=apply,
            subresource=subresource,
            has_status=self.strategy(resource).has_status,
            merged=merged,
        )


def check_update_name(
    body: dict[str, Any], name: str, namespace: str = "", *, namespaced: bool = False
) -> None:
    """The update and patch handlers' identity checks on the object to write, in their
    order: EnsureObjectNamespaceMatchesRequestNamespace (a namespace left out is the
    request's; a cluster-scoped object has none), then checkName (the body names the
    object of the URL)."""
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        body_namespace = metadata.get("namespace")
        if not namespaced:
            metadata.pop("namespace", None)
        elif body_namespace and body_namespace != namespace:
            raise APIError.bad_request(
                "the namespace of the provided object does not match the namespace sent on "
                "the request"
            )
    body_name = metadata.get("name") if isinstance(metadata, dict) else None
    if not body_name:
        raise APIError.bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: "
            "name must be provided"
        )
    if body_name != name:
        raise APIError.bad_request(
            f"the name of the object ({body_name}) does not match the name on the URL ({name})"
        )


#: How often a create tries a generated name (upstream's RetryGenerateName).
_GENERATE_NAME_TRIES = 8
#: A generated name: the prefix cut to 58 characters, then five random ones
#: (upstream's names.SimpleNameGenerator).
_MAX_GENERATED_PREFIX = 58


def _generate_name(prefix: str) -> str:
    return prefix[:_MAX_GENERATED_PREFIX] + "".join(_UNIQUE.choices(_NAME_SUFFIX_ALPHABET, k=5))


def _spec_finalizers(resource: ResourceType, obj: dict[str, Any]) -> list[str]:
    """A namespace's spec.finalizers (``kubernetes``): they too hold its final deletion."""
    if resource.kind != "Namespace" or resource.group:
        return []
    return list((obj.get("spec") or {}).get("finalizers") or [])


def _without_times(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the managedFields timestamps left out (they alone are no change)."""
    entries = meta(obj).get("managedFields") or []
    stripped = [{k: v for k, v in e.items() if k != "time"} for e in entries if isinstance(e, dict)]
    return {**obj, "metadata": {**meta(obj), "managedFields": stripped}}
