"""Forms of the scenario pages: a scenario's sharing fields, JSON import, trace upload.

The scenario document itself is validated by the engine (``validation.validate_spec``); these
forms check only what the web adds around it. Their errors are reported with the builder's
dotted paths (``meta.tags``, ``meta.visibility``, ``meta.group``, ``name``).
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib.auth.models import Group

from gridweb import safe_json
from gridweb.sharing import MAX_TAG_LENGTH, MAX_TAGS, Visibility

MAX_NAME_LENGTH = 200
#: Largest scenario JSON file accepted by the import form.
MAX_IMPORT_BYTES = 2 * 1024 * 1024


def parse_tags(value: Any) -> list[str]:
    """Tags from a list or a comma-separated string: stripped, empty ones dropped, duplicates once."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list):
        items = value
    else:
        raise forms.ValidationError("must be a list of tags or a comma-separated string")
    tags: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise forms.ValidationError("every tag must be text")
        tag = item.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


class TagsField(forms.Field):
    def to_python(self, value: Any) -> list[str]:
        return parse_tags(value)

    def validate(self, value: list[str]) -> None:
        if len(value) > MAX_TAGS:
            raise forms.ValidationError(f"at most {MAX_TAGS} tags (got {len(value)})")
        long = [t for t in value if len(t) > MAX_TAG_LENGTH]
        if long:
            raise forms.ValidationError(f"tags are at most {MAX_TAG_LENGTH} characters: {long[0][:50]!r} is longer")


class SharingForm(forms.Form):
    """Tags, visibility and research group of a scenario (or a run started from it)."""

    tags = TagsField(required=False)
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.PRIVATE)
    group = forms.ModelChoiceField(queryset=Group.objects.none(), required=False)

    def __init__(self, *args: Any, user=None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.user = user
        groups = Group.objects.all() if user is not None and user.is_superuser else (
            user.groups.all() if user is not None and user.is_authenticated else Group.objects.none())
        self.fields["group"].queryset = groups.order_by("name")
        self.fields["group"].error_messages["invalid_choice"] = "you are not a member of that group"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("visibility") == Visibility.GROUP and not data.get("group"):
            self.add_error("group", "choose the group to share with (you need to be a member of one)")
        return data

    def path_errors(self) -> dict[str, list[str]]:
        """The form's errors under the builder's paths (``meta.<field>``)."""
        return {f"meta.{field}": [str(m) for m in messages] for field, messages in self.errors.items()}


def name_errors(spec: Any) -> dict[str, list[str]]:
    """The scenario's name is what lists and the gallery show: it must be given, and fit."""
    name = spec.get("name") if isinstance(spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        return {"name": ["give the scenario a name"]}
    if len(name) > MAX_NAME_LENGTH:
        return {"name": [f"at most {MAX_NAME_LENGTH} characters (got {len(name)})"]}
    return {}


class ImportForm(forms.Form):
    """A scenario JSON file: either the scenario document itself (as exported, or as the
    command line reads it) or an object with the document under ``spec`` (as the API returns)."""

    file = forms.FileField(help_text="A scenario .json file")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            raise forms.ValidationError(
                f"the file is {upload.size:,} bytes, larger than the limit of {MAX_IMPORT_BYTES:,} bytes")
        raw = upload.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise forms.ValidationError(f"{upload.name}: not UTF-8 text") from None
        # Measured before parsing: json.loads of 5,000 nested brackets raises RecursionError (a 500).
        if safe_json.depth(text) > safe_json.MAX_DEPTH:
            raise forms.ValidationError(f"{upload.name}: nested more than {safe_json.MAX_DEPTH} levels deep")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"{upload.name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        except ValueError:  # an integer of more digits than Python converts: check_values names it
            data = json.loads(text, parse_int=safe_json.parse_integer)
        try:  # (no NUL characters, unpaired surrogates or infinite numbers: the page and the database hold none)
            safe_json.check_values(data)
        except safe_json.BadJson as exc:
            raise forms.ValidationError(f"{upload.name}: {exc.path}: {exc.reason}") from None
        if isinstance(data, dict) and isinstance(data.get("spec"), dict):
            self.imported_tags = parse_tags(data.get("tags")) if isinstance(data.get("tags"), list) else []
            data = data["spec"]
        else:
            self.imported_tags = []
        if not isinstance(data, dict):
            raise forms.ValidationError(f"{upload.name}: a scenario must be a JSON object, not {type(data).__name__}")
        return data


class TraceUploadForm(forms.Form):
    """An SWF/GWF trace for a trace stream (stored by ``traces.store_trace``)."""

    file = forms.FileField()
    name = forms.CharField(required=False, max_length=200)
    format = forms.ChoiceField(choices=[("", "from the file name"), ("swf", "SWF"), ("gwf", "GWF"),
                                        ("batsim", "Batsim workload (JSON)")], required=False)
    visibility = forms.ChoiceField(choices=Visibility.choices, initial=Visibility.PRIVATE, required=False)
