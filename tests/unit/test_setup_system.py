"""scripts/setup-system.sh takes bookworm-backports' mirror from the machine's own apt
sources (a machine behind a local mirror has no other route), in the format they use."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from roadtest.checkout import repo_root

SCRIPT = repo_root() / "scripts" / "setup-system.sh"

DEB822 = """Types: deb deb-src
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example.lan/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.lan/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def derive(apt: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), "--print-backports-source"],
        env={"PATH": "/usr/bin:/bin", "ROADTEST_APT_ETC": str(apt)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def apt(tmp_path: Path) -> Path:
    (tmp_path / "sources.list.d").mkdir()
    return tmp_path


def test_a_deb822_entry_gives_its_mirror_and_keys(apt: Path) -> None:
    (apt / "sources.list.d" / "debian.sources").write_text(DEB822)
    result = derive(apt)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"{apt}/sources.list.d/roadtest-backports.sources\n"
        "Types: deb\n"
        "URIs: http://mirror.example.lan/debian\n"
        "Suites: bookworm-backports\n"
        "Components: main contrib\n"
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )


def test_a_one_line_entry_gives_its_mirror_and_options(apt: Path) -> None:
    (apt / "sources.list").write_text(
        "# deb cdrom:[Debian GNU/Linux 12]/ bookworm main\n"
        "deb-src http://elsewhere.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/etc/apt/keys/local.gpg] http://10.0.0.1/debian bookworm main\n"
        "deb http://10.0.0.1/debian-security bookworm-security main\n"
    )
    result = derive(apt)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"{apt}/sources.list.d/roadtest-backports.list\n"
        "deb [arch=amd64 signed-by=/etc/apt/keys/local.gpg] http://10.0.0.1/debian "
        "bookworm-backports main\n"
    )


def test_disabled_and_cdrom_entries_and_our_own_old_file_are_not_sources(apt: Path) -> None:
    (apt / "sources.list").write_text("deb cdrom:[Debian GNU/Linux 12]/ bookworm main\n")
    (apt / "sources.list.d" / "off.sources").write_text(
        "Enabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: bookworm\n"
        "Components: main\n"
    )
    # What the script wrote before it took the machine's mirror: not a bookworm entry.
    (apt / "sources.list.d" / "roadtest-backports.list").write_text(
        "deb http://deb.debian.org/debian bookworm-backports main\n"
    )
    (apt / "sources.list.d" / "local.list").write_text("deb http://local.example/d bookworm main\n")
    result = derive(apt)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == "deb http://local.example/d bookworm-backports main"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("sources.list.d/bpo.list", "deb http://10.0.0.1/debian bookworm-backports main\n"),
        (
            "sources.list.d/bpo.sources",
            "Types: deb\nURIs: http://10.0.0.1/debian\nSuites: bookworm-backports\n"
            "Components: main\n",
        ),
    ],
)
def test_backports_already_configured_adds_nothing(apt: Path, name: str, text: str) -> None:
    (apt / "sources.list.d" / "debian.sources").write_text(DEB822)
    (apt / name).write_text(text)
    result = derive(apt)
    assert (result.returncode, result.stdout) == (0, "")


def test_no_bookworm_entry_is_one_line_and_a_failure(apt: Path) -> None:
    (apt / "sources.list").write_text("deb http://10.0.0.1/debian trixie main\n")
    result = derive(apt)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert "no apt source for Debian bookworm" in result.stderr


def test_setup_writes_the_derived_source_then_installs(apt: Path, tmp_path: Path) -> None:
    # As root on a machine missing QEMU's backports version: dpkg-query, id and apt-get faked.
    (apt / "sources.list.d" / "debian.sources").write_text(DEB822)
    old = apt / "sources.list.d" / "roadtest-backports.list"
    old.write_text("deb http://deb.debian.org/debian bookworm-backports main\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt-get.log"
    fakes = {
        # Everything is installed, QEMU in bookworm's own version (no ~bpo12).
        "dpkg-query": '#!/bin/sh\ncase "$*" in *Version*) echo 1:7.2+dfsg-7 ;; '
        "*) echo installed ;; esac\n",
        "id": "#!/bin/sh\necho 0\n",
        "apt-get": f'#!/bin/sh\necho "$*" >>{log}\n',
    }
    for name, text in fakes.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    result = subprocess.run(
        ["bash", str(SCRIPT)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ROADTEST_APT_ETC": str(apt)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    written = apt / "sources.list.d" / "roadtest-backports.sources"
    assert "URIs: http://mirror.example.lan/debian\n" in written.read_text()
    assert not old.exists()
    assert f"bookworm-backports from the machine's own mirror, in {written}" in result.stdout
    assert log.read_text().splitlines() == [
        "update -q",
        "install -y -q --no-install-recommends -t bookworm-backports qemu-system-x86",
    ]
