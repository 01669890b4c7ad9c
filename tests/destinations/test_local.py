"""Local folder delivery inside QUARRY_HOME."""

from __future__ import annotations

import hashlib
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
