from . import collections, modeladmins, redblue  # noqa: F401 - Django autodiscovers challenges.admin: register the ModelAdmins
