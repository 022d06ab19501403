"""Enrolling from a CSV file: the line checker drips hand to the shared import (:mod:`models.imports.runs`).

The file names contacts, one per line: an ``email`` and/or a ``phone`` column, optional
``name`` and ``timezone``, and any other column becomes an attribute templates can use
(``plan`` → ``{{ attributes.plan }}``). A line's contact is found by its email (else its
phone) or created; then it is enrolled.

| fate                | accepted | when                                                        |
|---------------------|----------|-------------------------------------------------------------|
| ``enroll``          | yes      | the contact (found or new) will be enrolled                  |
| ``already_enrolled``| no       | the contact is enrolled in this campaign now                 |
| ``unsubscribed``    | no       | the contact unsubscribed (or bounced): never sent to again   |
| ``invalid_email``   | no       | the email is not an address                                  |
| ``invalid_phone``   | no       | the phone is not in E.164 form                               |
| ``no_address``      | no       | neither an email nor a phone                                 |
| ``no_address_for_channel`` | no | no address the campaign's channels deliver to (an email only, for SMS steps) |
| ``unknown_zone``    | no       | the timezone is not an IANA zone                             |
| ``invalid_value``   | no       | a name or attribute too long                                 |
| ``two_contacts``    | no       | the email and the phone belong to two different contacts     |
| ``duplicate_in_file`` | no     | an earlier line names the same email or phone                |
| ``campaign_closed`` | no       | (commit only) the campaign was archived since the dry run    |
"""

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.core.errors import DomainError, InvalidInput
from models.core.moves import Actor
from models.drips import contacts as contact_moves
from models.drips.checks import (
    ATTRIBUTE_KEY,
    MAX_ATTRIBUTE_VALUE,
    MAX_CONTACT_NAME,
    check_email,
    check_phone,
    check_zone,
)
from models.drips.operations import campaign_reaches, check_enrollable, contact_reached, insert_enrollment
from models.drips.reading import current_version, get_campaign, version_steps
from models.drips.tables import CampaignStatus, Contact, ContactStatus, Enrollment, EnrollmentStatus
from models.imports.csv_file import CsvLine
from models.imports.runs import Fate

ENROLL = "enroll"
KNOWN = ("email", "phone", "name", "timezone")


class _Line:
    """One line's values, checked: the contact it names, or the fate that refuses it."""

    def __init__(self, line: CsvLine):
        self.line = line
        self.fate: Fate | None = None
        self.contact: Contact | None = None
        self.email = self.phone = self.zone = None
        self.name = ""
        self.attributes: dict = {}
        values = line.values
        try:
            self.email = check_email(values.get("email") or None)
        except InvalidInput as exc:
            self.fate = Fate("invalid_email", False, exc.message)
            return
        try:
            self.phone = check_phone(values.get("phone") or None)
        except InvalidInput as exc:
            self.fate = Fate("invalid_phone", False, exc.message)
            return
        if self.email is None and self.phone is None:
            self.fate = Fate("no_address", False, "no email and no phone")
            return
        try:
            self.zone = check_zone(values.get("timezone") or None)
        except InvalidInput as exc:
            self.fate = Fate("unknown_zone", False, exc.message)
            return
        self.name = values.get("name", "")
        if len(self.name) > MAX_CONTACT_NAME:
            self.fate = Fate("invalid_value", False, f"the name is longer than {MAX_CONTACT_NAME} characters")
            return
        self.attributes = {key: value for key, value in values.items() if key not in KNOWN and value != ""}
        for key, value in self.attributes.items():
            if len(value) > MAX_ATTRIBUTE_VALUE:
                self.fate = Fate("invalid_value", False, f"{key} is longer than {MAX_ATTRIBUTE_VALUE} characters")
                return

    @property
    def key(self) -> str:
        return self.email or self.phone


class EnrollmentImport:
    """The :class:`~models.imports.runs.LineChecker` of ``POST /api/v1/campaigns/ID/enrollments.csv``."""

    kind = "drip_enrollments"

    def check_header(self, columns: list[str]) -> None:
        if "email" not in columns and "phone" not in columns:
            shown = ", ".join(repr(c[:30]) for c in columns[:5])
            raise InvalidInput(f"line 1 must be a header naming an email or a phone column (and optionally name, "
                               f"timezone and attributes); it reads {shown}", field="file", code="missing_header",
                               line=1)
        for column in columns:
            if column not in KNOWN and not ATTRIBUTE_KEY.match(column):
                raise InvalidInput(f"the header's column {column[:64]!r} is not an attribute name: letters, digits "
                                   "and _, starting with a letter", field="file", code="bad_header", line=1)

    def _classify(self, session: Session, workspace_id: int, campaign_id: int, lines: list[CsvLine],
                  state: dict) -> list[_Line]:
        checked = [_Line(line) for line in lines]
        campaign = get_campaign(session, workspace_id, campaign_id)
        reaches = campaign_reaches(session, campaign, version_steps(session, current_version(session, campaign.id).id))
        emails = [c.email for c in checked if c.fate is None and c.email]
        phones = [c.phone for c in checked if c.fate is None and c.phone]
        by_email = {c.email: c for c in session.scalars(select(Contact).where(
            Contact.workspace_id == workspace_id, Contact.email.in_(emails)))} if emails else {}
        by_phone = {c.phone: c for c in session.scalars(select(Contact).where(
            Contact.workspace_id == workspace_id, Contact.phone.in_(phones)))} if phones else {}
        known = {c.id for c in by_email.values()} | {c.id for c in by_phone.values()}
        enrolled = set(session.scalars(select(Enrollment.contact_id).where(
            Enrollment.campaign_id == campaign_id, Enrollment.status == EnrollmentStatus.ACTIVE.value,
            Enrollment.contact_id.in_(known)))) if known else set()
        seen = state.setdefault("seen", {})
        for c in checked:
            if c.fate is not None:
                continue
            for address in (c.email, c.phone):
                if address and address in seen:
                    c.fate = Fate("duplicate_in_file", False, f"line {seen[address]} names {address} too")
                    break
            if c.fate is not None:
                continue
            for address in (c.email, c.phone):
                if address:
                    seen[address] = c.line.number
            found_by_email, found_by_phone = by_email.get(c.email), by_phone.get(c.phone)
            if found_by_email and found_by_phone and found_by_email.id != found_by_phone.id:
                c.fate = Fate("two_contacts", False, f"the email is contact #{found_by_email.id}'s and the phone "
                                                     f"contact #{found_by_phone.id}'s")
                continue
            c.contact = found_by_email or found_by_phone
            if c.contact is not None and c.contact.status != ContactStatus.SUBSCRIBED.value:
                c.fate = Fate("unsubscribed", False, f"contact #{c.contact.id} is {c.contact.status}")
            elif c.contact is not None and c.contact.id in enrolled:
                c.fate = Fate("already_enrolled", False, f"contact #{c.contact.id} is enrolled already")
            elif not contact_reached(reaches, email=c.email or (c.contact and c.contact.email),
                                     phone=c.phone or (c.contact and c.contact.phone)):
                have = "an email" if c.email else "a phone"
                c.fate = Fate("no_address_for_channel", False,
                              f"only {have}; this campaign sends to {' or '.join(sorted(reaches))}")
            else:
                c.fate = Fate(ENROLL, True, f"contact #{c.contact.id}" if c.contact is not None else "a new contact")
        return checked

    def check(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine], state: dict) -> list[Fate]:
        return [c.fate for c in self._classify(session, workspace_id, int(target), lines, state)]

    def apply(self, session: Session, workspace_id: int, target: str, lines: list[CsvLine], *, actor: Actor,
              now: datetime) -> list[Fate]:
        campaign = get_campaign(session, workspace_id, int(target), share=True)
        if campaign.status not in (CampaignStatus.ACTIVE.value, CampaignStatus.PAUSED.value):
            return [Fate("campaign_closed", False, f"the campaign is {campaign.status}") for _ in lines]
        version = current_version(session, campaign.id)
        steps = version_steps(session, version.id)
        zone = session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
        fates = []
        for c in self._classify(session, workspace_id, campaign.id, lines, {}):
            if not c.fate.accepted:
                fates.append(c.fate)
                continue
            contact = c.contact
            if contact is None:
                contact = self._new_contact(session, workspace_id, c, actor=actor, now=now)
            try:
                check_enrollable(campaign, contact)
            except DomainError as exc:
                fates.append(Fate("unsubscribed", False, exc.message))
                continue
            enrollment = insert_enrollment(session, campaign, version, steps, contact, zone, actor=actor, now=now,
                                           reason=f"enrolled from a CSV file (line {c.line.number})")
            fates.append(c.fate if enrollment is not None else Fate("already_enrolled", False,
                                                                    f"contact #{contact.id} is enrolled already"))
        return fates

    def _new_contact(self, session: Session, workspace_id: int, c: _Line, *, actor: Actor, now: datetime) -> Contact:
        """The line's contact, created; or the one another request created with its address meanwhile."""
        contact = Contact(workspace_id=workspace_id, email=c.email, phone=c.phone, name=c.name, timezone=c.zone,
                          attributes=c.attributes, status=ContactStatus.SUBSCRIBED.value, created_by_id=actor.user_id,
                          created_at=now, updated_at=now)
        try:
            with session.begin_nested():
                session.add(contact)
                session.flush()
        except IntegrityError:
            column, value = (Contact.email, c.email) if c.email else (Contact.phone, c.phone)
            return session.scalar(select(Contact).where(Contact.workspace_id == workspace_id, column == value))
        contact_moves.record_creation(session, contact, now=now, actor=actor, reason="imported from a CSV file")
        return contact
