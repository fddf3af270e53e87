"""The sandbox phone's apps, one module each; every app's tools are ``@tool`` methods."""

from __future__ import annotations

from ._base import DOMAINS, App, Domain
from .accessibility import AccessibilityApp
from .bank import BankApp
from .calculator import CalculatorApp
from .calendar import CalendarApp
from .cast import CastApp
from .clock import ClockApp
from .contacts import ContactsApp
from .converter import ConverterApp
from .earbuds import EarbudsApp
from .email import EmailApp
from .files import FilesApp
from .gallery import GalleryApp
from .health import HealthApp
from .home import HomeApp
from .launcher import LauncherApp
from .maps import MapsApp
from .messages import MessagesApp
from .music import MusicApp
from .notes import NotesApp
from .power import PowerApp
from .settings import SettingsApp
from .shop import ShopApp
from .travel import TravelApp
from .wallet import WalletApp

__all__ = ["APP_CLASSES", "DOMAINS", "EVERYDAY_APPS", "App", "Domain"]

APP_CLASSES: tuple[type[App], ...] = (
    SettingsApp,
    EarbudsApp,
    NotesApp,
    ContactsApp,
    MessagesApp,
    HealthApp,
    ConverterApp,
    CalculatorApp,
    CastApp,
    PowerApp,
    LauncherApp,
    ClockApp,
    CalendarApp,
    # added with issue 16 §2
    EmailApp,
    MapsApp,
    WalletApp,
    TravelApp,
    ShopApp,
    BankApp,
    FilesApp,
    GalleryApp,
    MusicApp,
    HomeApp,
    AccessibilityApp,
)
"""Every app, in the order their tools are listed to the planner."""

EVERYDAY_APPS: tuple[str, ...] = tuple(cls.name for cls in APP_CLASSES[:13])
"""What a free request sees unless told otherwise: the phone's everyday functions (settings,
messages, notes, clock...), 37 tools. Every app at once is more than a small planner's tool budget
(``ContextBudget.tools``); tasks name the apps they need."""
