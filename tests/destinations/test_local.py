"""Local folder delivery inside QUARRY_HOME."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path

import pytest

from destinations.base import Delivery, DeliveryError
from destinations.local import LocalDestination
from quarry.errors import InvalidRequest
from quarry.settings import Settings
from tests.destinations.conftest import make_delivery


def build(app_settings: Settings, **settings: str) -> LocalDestination:
    return LocalDestination(LocalDestination.validate(settings, {}, app_settings), {}, app_settings)


def test_copies_into_folder_under_home(app_settings: Settings, delivery: Delivery) -> None:
    receipt = build(app_settings, folder="deliveries/daily").deliver(delivery)
    target = app_settings.home / "deliveries" / "daily"
    assert sorted(p.name for p in target.iterdir()) == ["orders.csv"]
    assert (target / "orders.csv").read_bytes() == delivery.path.read_bytes()
    assert receipt.location == str(target / "orders.csv")
    assert receipt.sha256 == hashlib.sha256(delivery.path.read_bytes()).hexdigest()


def test_retry_overwrites_own_file(app_settings: Settings, tmp_path: Path) -> None:
    destination = build(app_settings)
    destination.deliver(make_delivery(tmp_path / "a", 100, job_id="job-1"))
    second = make_delivery(tmp_path / "b", 200, job_id="job-1")
    destination.deliver(second)
    folder = app_settings.home / "deliveries"
    assert sorted(p.name for p in folder.iterdir()) == ["orders.csv"]
    assert (folder / "orders.csv").read_bytes() == second.path.read_bytes()


def test_absolute_folder_inside_home_is_accepted(
    app_settings: Settings, delivery: Delivery
) -> None:
    folder = app_settings.home / "elsewhere"
    build(app_settings, folder=str(folder)).deliver(delivery)
    assert (folder / "orders.csv").exists()


@pytest.mark.parametrize("folder", ["/etc", "../outside", "a/../../b"])
def test_folders_outside_home_are_refused(app_settings: Settings, folder: str) -> None:
    with pytest.raises(InvalidRequest) as failure:
        LocalDestination.validate({"folder": folder}, {}, app_settings)
    assert failure.value.errors[0]["field"] == "destination.settings.folder"


def test_symlink_out_of_home_is_refused_at_delivery(
    app_settings: Settings, delivery: Delivery, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    app_settings.home.mkdir(parents=True, exist_ok=True)
    (app_settings.home / "link").symlink_to(outside)
    destination = build(app_settings, folder="link")
    with pytest.raises(DeliveryError) as failure:
        destination.deliver(delivery)
    assert "not inside QUARRY_HOME" in failure.value.reason
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("name", ["../escape.csv", "a/b.csv", "", "x\ny.csv"])
def test_file_names_must_be_plain(app_settings: Settings, tmp_path: Path, name: str) -> None:
    delivery = make_delivery(tmp_path, 10, name=name)
    with pytest.raises(DeliveryError):
        build(app_settings).deliver(delivery)


def test_on_one_file_system_the_delivery_is_a_link_to_the_jobs_file(
    app_settings: Settings, tmp_path: Path
) -> None:
    # The job's file lives under QUARRY_HOME, as exports.files.produce stores it.
    delivery = make_delivery(app_settings.home / "exports" / "job-1", 1000, job_id="job-1")
    build(app_settings).deliver(delivery)
    delivered = app_settings.home / "deliveries" / "orders.csv"
    assert delivered.stat().st_ino == delivery.path.stat().st_ino
    # Delivered again (the same job's file): one name, no partial file left beside it.
    build(app_settings).deliver(delivery)
    assert sorted(p.name for p in delivered.parent.iterdir()) == ["orders.csv"]
    assert delivered.read_bytes() == delivery.path.read_bytes()


def test_where_no_link_can_be_made_the_file_is_copied(
    app_settings: Settings, delivery: Delivery, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cross_device(source: object, link: object, **_: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    receipt = build(app_settings).deliver(delivery)
    delivered = Path(receipt.location)
    assert delivered.read_bytes() == delivery.path.read_bytes()
    assert delivered.stat().st_ino != delivery.path.stat().st_ino
    assert sorted(p.name for p in delivered.parent.iterdir()) == ["orders.csv"]


def test_other_link_failures_fail_the_delivery(
    app_settings: Settings, delivery: Delivery, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_space(source: object, link: object, **_: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", no_space)
    with pytest.raises(DeliveryError) as failure:
        build(app_settings).deliver(delivery)
    assert "No space left" in failure.value.reason
    assert list((app_settings.home / "deliveries").iterdir()) == []
