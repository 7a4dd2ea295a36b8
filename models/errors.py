"""Errors raised while preparing a model. The message always names the stage and the cause."""

from __future__ import annotations


class PrepareError(RuntimeError):
    """Preparation failed; nothing half-written is left in the cache."""

    def __init__(self, stage: str, cause: str):
        self.stage = stage
        self.cause = cause
        super().__init__(f"prepare failed at stage '{stage}': {cause}")


class PrepareCancelled(PrepareError):
    """The user cancelled (GUI Cancel or Ctrl-C); nothing half-written is left in the cache."""

    def __init__(self, stage: str, cause: str = "cancelled by the user"):
        super().__init__(stage, cause)
        self.args = (f"prepare cancelled at stage '{stage}': {cause}",)

    def __str__(self) -> str:
        return self.args[0]


class PickledWeightsRefused(PrepareError):
    """A hub repository with only pickled weights, refused; preparing again with allow_pickled_weights reads them
    with torch's weights_only loader."""


class LicenceNotAccepted(ValueError):
    """A catalog entry whose licence must be accepted was asked for without accepting it (`--accept-license`, or
    the window's Accept). Names the licence and where its text is; nothing was downloaded."""

    def __init__(self, model: str, licence_name: str, where: str, flag: str = "--accept-license"):
        self.model = model
        self.licence_name = licence_name
        self.where = where
        super().__init__(
            f"{model} is licensed under the {licence_name}: {where}. Read the terms, then prepare it with {flag} "
            "to accept them"
        )
