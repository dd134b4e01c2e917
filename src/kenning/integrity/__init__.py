"""Checking an index end to end (`kenning verify`) and rebuilding it from its sources (`kenning repair`)."""

from kenning.integrity.repair import RepairReport, repair
from kenning.integrity.verify import Problem, VerifyReport, verify

__all__ = ["Problem", "RepairReport", "VerifyReport", "repair", "verify"]
