"""Encryption at rest for channel secrets, keyed from the application's secret."""

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


class SecretUnreadable(Exception):
    """A stored secret cannot be decrypted (the application secret changed?)."""


class SecretBox:
    """Fernet (AES-128-CBC + HMAC-SHA256) with a key derived by HKDF from the app secret."""

    def __init__(self, app_secret: str):
        self._app_secret = app_secret.encode()
        self._derived: dict[str, bytes] = {}
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"tickwork channel secrets").derive(
            app_secret.encode()
        )
        self._fernet = Fernet(base64.urlsafe_b64encode(key))

    def derive_key(self, purpose: str) -> bytes:
        """A key of its own for ``purpose`` (signing links, say), derived from the app secret by HKDF.

        Each purpose gets an independent key, so a signature made for one never verifies for another,
        and none of them is the key that seals channel secrets.
        """
        if purpose not in self._derived:
            self._derived[purpose] = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                                          info=b"tickwork " + purpose.encode()).derive(self._app_secret)
        return self._derived[purpose]

    def seal(self, plaintext: str) -> str:
        return self._fernet.encrypt(plaintext.encode()).decode()

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken as exc:
            raise SecretUnreadable("the channel secret cannot be decrypted with this app's secret key") from exc
