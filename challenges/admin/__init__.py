from . import (
    collections_admin,  # noqa: F401 - the collections' ModelAdmins
    modeladmins,  # noqa: F401 - Django autodiscovers challenges.admin: register the ModelAdmins
    redblue_admin,  # noqa: F401 - red/blue's ModelAdmins
    webhooks_admin,  # noqa: F401 - the webhooks' ModelAdmins
)
