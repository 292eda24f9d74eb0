from . import (
    modeladmins,  # noqa: F401 - Django autodiscovers challenges.admin: register the ModelAdmins
    webhooks,  # noqa: F401 - the webhooks' ModelAdmins
)
