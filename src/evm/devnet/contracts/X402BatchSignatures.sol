// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice The EIP-1271 view a contract signer answers.
interface IERC1271Signer {
    function isValidSignature(bytes32 hash, bytes calldata signature)
        external
        view
        returns (bytes4 magicValue);
}

/// @title X402BatchSignatures
/// @notice The signature checks of x402BatchSettlement, with the semantics (and, where a check
///         reverts, the errors) of the OpenZeppelin ECDSA and SignatureChecker it uses: 65-byte
///         signatures only, high-s and bad-v rejected; a signer with code answers EIP-1271.
library X402BatchSignatures {
    error ECDSAInvalidSignature();
    error ECDSAInvalidSignatureLength(uint256 length);
    error ECDSAInvalidSignatureS(bytes32 s);

    uint256 private constant HALF_ORDER =
        0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0;

    enum Failure {
        None,
        Signature,
        Length,
        S
    }

    /// @dev Never reverts: a failure is returned with the value its error would carry.
    function tryRecover(bytes32 digest, bytes calldata signature)
        internal
        pure
        returns (address signer, Failure failure, bytes32 arg)
    {
        if (signature.length != 65) return (address(0), Failure.Length, bytes32(signature.length));
        bytes32 r = bytes32(signature[0:32]);
        bytes32 s = bytes32(signature[32:64]);
        uint8 v = uint8(signature[64]);
        if (uint256(s) > HALF_ORDER) return (address(0), Failure.S, s);
        signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) return (address(0), Failure.Signature, 0);
        return (signer, Failure.None, 0);
    }

    /// @dev Reverts on a malformed or unrecoverable signature, as ECDSA.recoverCalldata.
    function recover(bytes32 digest, bytes calldata signature) internal pure returns (address) {
        (address signer, Failure failure, bytes32 arg) = tryRecover(digest, signature);
        if (failure == Failure.Length) revert ECDSAInvalidSignatureLength(uint256(arg));
        if (failure == Failure.S) revert ECDSAInvalidSignatureS(arg);
        if (failure == Failure.Signature) revert ECDSAInvalidSignature();
        return signer;
    }

    /// @dev An account without code must have signed with its key; one with code (a smart
    ///      wallet) decides through EIP-1271.
    function isValidNow(address signer, bytes32 digest, bytes calldata signature)
        internal
        view
        returns (bool)
    {
        if (signer.code.length == 0) {
            (address recovered, Failure failure,) = tryRecover(digest, signature);
            return failure == Failure.None && recovered == signer;
        }
        (bool ok, bytes memory result) = signer.staticcall(
            abi.encodeCall(IERC1271Signer.isValidSignature, (digest, signature))
        );
        return ok && result.length >= 32
            && abi.decode(result, (bytes32)) == bytes32(IERC1271Signer.isValidSignature.selector);
    }
}
