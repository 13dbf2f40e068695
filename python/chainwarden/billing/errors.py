"""Typed billing errors: what failed, where, and whether the usage is safe (docs/billing.md).

Defined with the rest of the package's hierarchy in `chainwarden.errors` (docs/errors.md)."""

from chainwarden.errors import BillingError, BillingUnsettled, LedgerUnavailable

__all__ = ["BillingError", "BillingUnsettled", "LedgerUnavailable"]
