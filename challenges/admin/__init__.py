from . import collections, modeladmins  # noqa: F401 - Django autodiscovers challenges.admin: register the ModelAdmins
