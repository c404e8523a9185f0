"""Forms that make jobs: "create a job of this task" and "retry with edited data".

:func:`call_form_class` builds a Django form from a ``@task`` function's signature: one field
per parameter, its value typed as JSON (``42``, ``"text"``, ``{"a": [1]}``), required unless
the parameter has a default, with ``*args`` as a JSON list and ``**kwargs`` as a JSON object
(a raw task: one field, the job data). The form's :meth:`CallForm.call` is the
``(args, kwargs)`` to enqueue; it is checked as ``enqueue`` checks a call (the signature, and
every value JSON), so the admin cannot make a job the task would refuse.

:class:`EditedDataForm` is the whole ``data`` of a failed job as JSON, checked against its
task's signature when the job's name is a registered ``@task`` of django_bullq's data shape.
"""

from __future__ import annotations

import inspect
import json
from typing import TYPE_CHECKING, Any

from django import forms

from ..core.errors import SerializationError
from .json_field import JsonValueField

if TYPE_CHECKING:
    from ..producer.task import Task


class CallForm(forms.Form):
    """A form of :func:`call_form_class`: one call of its task."""

    task: Task[..., Any]
    #: field name -> (parameter, its kind)
    parameters: dict[str, inspect.Parameter]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        args, kwargs = self._call(cleaned)
        try:
            self.task._encoded(tuple(args), kwargs)  # enqueue's own checks: signature, JSON
        except (TypeError, SerializationError) as exc:
            raise forms.ValidationError(str(exc)) from exc
        cleaned["__call__"] = (args, kwargs)
        return cleaned

    def _call(self, cleaned: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for field, parameter in self.parameters.items():
            value = cleaned.get(field, inspect.Parameter.empty)
            if value is inspect.Parameter.empty:
                continue
            if parameter.kind is parameter.VAR_POSITIONAL:
                if not isinstance(value, list):
                    self.add_error(field, "*args takes a JSON list")
                    continue
                args.extend(value)
            elif parameter.kind is parameter.VAR_KEYWORD:
                if not isinstance(value, dict):
                    self.add_error(field, "**kwargs takes a JSON object")
                    continue
                kwargs.update(value)
            elif parameter.kind is parameter.POSITIONAL_ONLY or self.task.raw:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        if self.errors:
            raise forms.ValidationError("fix the fields above")
        return args, kwargs

    def call(self) -> tuple[list[Any], dict[str, Any]]:
        """The validated call: ``(args, kwargs)`` to pass to ``enqueue``."""
        result: tuple[list[Any], dict[str, Any]] = self.cleaned_data["__call__"]
        return result


def call_form_class(task: Task[..., Any]) -> type[CallForm]:
    """A form with one JSON field per parameter of ``task``'s function.

    Returns:
        A :class:`CallForm` subclass; its fields are named after the parameters (``*args``
        and ``**kwargs`` after theirs too), in signature order. A raw task's form has one
        field, ``data``.
    """
    fields: dict[str, forms.Field] = {}
    parameters: dict[str, inspect.Parameter] = {}
    if task.raw:
        data = inspect.Parameter("data", inspect.Parameter.POSITIONAL_ONLY)
        fields["data"] = JsonValueField(label="data", help_text="the job data, as JSON")
        parameters["data"] = data
    else:
        for parameter in task.signature().parameters.values():
            fields[parameter.name] = _field(parameter)
            parameters[parameter.name] = parameter
    attrs: dict[str, Any] = {**fields, "task": task, "parameters": parameters}
    return type(f"CallForm_{task.name.replace('.', '_')}", (CallForm,), attrs)


def _field(parameter: inspect.Parameter) -> JsonValueField:
    annotation = parameter.annotation
    hint = "" if annotation is inspect.Parameter.empty else _annotation_text(annotation)
    if parameter.kind is parameter.VAR_POSITIONAL:
        return JsonValueField(label=f"*{parameter.name}", required=False, help_text="a JSON list")
    if parameter.kind is parameter.VAR_KEYWORD:
        return JsonValueField(
            label=f"**{parameter.name}", required=False, help_text="a JSON object"
        )
    has_default = parameter.default is not inspect.Parameter.empty
    initial = None
    if has_default:
        try:
            initial = json.dumps(parameter.default)
        except (TypeError, ValueError):
            initial = None
    help_parts = [f"JSON{f', {hint}' if hint else ''}"]
    if has_default:
        help_parts.append("empty: the default")
    return JsonValueField(
        label=parameter.name,
        required=not has_default,
        initial=initial,
        help_text="; ".join(help_parts),
    )


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation  # `from __future__ import annotations` leaves them as text
    return getattr(annotation, "__name__", None) or str(annotation)


class EditedDataForm(forms.Form):
    """A failed job's whole ``data``, edited as JSON, for "retry with edited data".

    Args:
        task: the job's ``@task`` when its name is a registered one (the data is then checked
            as its ``enqueue`` would build it), else None (any JSON value).
    """

    #: not ``data``: that name is the bound form's own (``Form.data``)
    job_data = JsonValueField(label="data", help_text="the job's data, as JSON")

    def __init__(self, *args: Any, task: Task[..., Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task = task

    def clean_job_data(self) -> Any:
        value = self.cleaned_data["job_data"]
        if value is inspect.Parameter.empty:
            raise forms.ValidationError("the data cannot be empty (use null)")
        if self.task is not None:
            error = task_data_error(self.task, value)
            if error is not None:
                raise forms.ValidationError(error)
        return value


def task_data_error(task: Task[..., Any], value: Any) -> str | None:
    """Why job data ``value`` is not a call of ``task`` (checked as ``enqueue`` checks one:
    signature, strict JSON), or None when it is one.

    Args:
        task: the ``@task``. value: the job data, ``{"args": [...], "kwargs": {...}}`` (a raw
            task: any JSON value).
    """
    if task.raw:
        call_args: tuple[Any, ...] = (value,)
        call_kwargs: dict[str, Any] = {}
    else:
        if (
            not isinstance(value, dict)
            or set(value) != {"args", "kwargs"}
            or not isinstance(value["args"], list)
            or not isinstance(value["kwargs"], dict)
        ):
            return f'task {task.name!r} takes data {{"args": [...], "kwargs": {{...}}}}'
        call_args, call_kwargs = tuple(value["args"]), value["kwargs"]
    try:
        task._encoded(call_args, call_kwargs)
    except (TypeError, SerializationError) as exc:
        return str(exc)
    return None


__all__ = ["CallForm", "EditedDataForm", "call_form_class", "task_data_error"]
