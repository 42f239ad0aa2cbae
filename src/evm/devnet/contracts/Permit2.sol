// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @notice The EIP-1271 view a contract owner answers; the same call Permit2 makes.
interface IERC1271 {
    function isValidSignature(bytes32 hash, bytes calldata signature)
        external
        view
        returns (bytes4 magicValue);
}

/// @title Permit2 (SignatureTransfer part)
/// @notice A TEST re-implementation of the signature-transfer half of Uniswap's Permit2: the part
///         x402 uses. Same function selectors, EIP-712 domain and hashing, unordered nonces,
///         custom errors (names, arguments, selectors) and check order as the canonical contract,
///         so payloads signed for the real Permit2 settle here and fail here for the same reasons.
/// @dev    Placed with `anvil_setCode` at 0x000000000022D473030F116dDEE9F6B43aC78BA3; no
///         constructor runs, so the domain separator is computed on each call from
///         `block.chainid` and `address(this)`. The AllowanceTransfer half (approve/permit/
///         transferFrom with expiring allowances) and the batch variants are left out: x402 does
///         not use them.
contract Permit2 {
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    /// @dev Permit2's domain has no version field.
    bytes32 private constant DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant NAME_HASH = keccak256("Permit2");

    bytes32 private constant TOKEN_PERMISSIONS_TYPEHASH =
        keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 private constant PERMIT_TRANSFER_FROM_TYPEHASH = keccak256(
        "PermitTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline)TokenPermissions(address token,uint256 amount)"
    );
    /// @dev The caller completes the type with its witness field and the referenced types.
    string private constant PERMIT_WITNESS_TRANSFER_FROM_STUB =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    bytes32 private constant S_MASK =
        0x7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff;

    /// @notice Unordered nonces: bit (nonce & 0xff) of word (nonce >> 8) is set once used.
    mapping(address => mapping(uint256 => uint256)) public nonceBitmap;

    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    error InvalidAmount(uint256 maxAmount);
    error SignatureExpired(uint256 signatureDeadline);
    error InvalidNonce();
    error InvalidSignatureLength();
    error InvalidSignature();
    error InvalidSigner();
    error InvalidContractSignature();

    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(DOMAIN_TYPEHASH, NAME_HASH, block.chainid, address(this)));
    }

    /// @notice Moves `transferDetails.requestedAmount` of the permitted token from `owner` to
    ///         `transferDetails.to`; the caller must be the spender the owner signed for.
    function permitTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes calldata signature
    ) external {
        bytes32 structHash = keccak256(
            abi.encode(
                PERMIT_TRANSFER_FROM_TYPEHASH,
                _hashTokenPermissions(permit.permitted),
                msg.sender,
                permit.nonce,
                permit.deadline
            )
        );
        _permitTransferFrom(permit, transferDetails, owner, structHash, signature);
    }

    /// @notice Like permitTransferFrom, with extra signed data (`witness`, the hash of a struct
    ///         the caller defines in `witnessTypeString`) bound into the signature.
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        bytes32 typeHash =
            keccak256(abi.encodePacked(PERMIT_WITNESS_TRANSFER_FROM_STUB, witnessTypeString));
        bytes32 structHash = keccak256(
            abi.encode(
                typeHash,
                _hashTokenPermissions(permit.permitted),
                msg.sender,
                permit.nonce,
                permit.deadline,
                witness
            )
        );
        _permitTransferFrom(permit, transferDetails, owner, structHash, signature);
    }

    /// @notice Marks the nonces set in `mask`, in word `wordPos`, as used (cancels permits).
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    /// @dev Check order as in Permit2: deadline, amount, nonce, signature, then the transfer.
    function _permitTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 structHash,
        bytes calldata signature
    ) private {
        uint256 requestedAmount = transferDetails.requestedAmount;
        if (block.timestamp > permit.deadline) revert SignatureExpired(permit.deadline);
        if (requestedAmount > permit.permitted.amount) {
            revert InvalidAmount(permit.permitted.amount);
        }
        _useUnorderedNonce(owner, permit.nonce);
        bytes32 digest = keccak256(abi.encodePacked("\x19\x01", DOMAIN_SEPARATOR(), structHash));
        _verify(signature, digest, owner);
        _safeTransferFrom(permit.permitted.token, owner, transferDetails.to, requestedAmount);
    }

    function _hashTokenPermissions(TokenPermissions calldata permitted)
        private
        pure
        returns (bytes32)
    {
        return keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permitted.token, permitted.amount));
    }

    function _useUnorderedNonce(address owner, uint256 nonce) private {
        uint256 wordPos = nonce >> 8;
        uint256 bit = 1 << (nonce & 0xff);
        uint256 flipped = nonceBitmap[owner][wordPos] ^= bit;
        if (flipped & bit == 0) revert InvalidNonce();
    }

    /// @dev EOAs: 65-byte (r, s, v) or 64-byte EIP-2098 (r, vs) ECDSA, without Permit2 rejecting
    ///      high-s values (it does not). Contracts: EIP-1271, whose revert, if any, bubbles up.
    function _verify(bytes calldata signature, bytes32 digest, address claimedSigner)
        private
        view
    {
        if (claimedSigner.code.length > 0) {
            bytes4 magic = IERC1271(claimedSigner).isValidSignature(digest, signature);
            if (magic != IERC1271.isValidSignature.selector) revert InvalidContractSignature();
            return;
        }
        bytes32 r;
        bytes32 s;
        uint8 v;
        if (signature.length == 65) {
            r = bytes32(signature[0:32]);
            s = bytes32(signature[32:64]);
            v = uint8(signature[64]);
        } else if (signature.length == 64) {
            r = bytes32(signature[0:32]);
            bytes32 vs = bytes32(signature[32:64]);
            s = vs & S_MASK;
            v = uint8(uint256(vs) >> 255) + 27;
        } else {
            revert InvalidSignatureLength();
        }
        address signer = ecrecover(digest, v, r, s);
        if (signer == address(0)) revert InvalidSignature();
        if (signer != claimedSigner) revert InvalidSigner();
    }

    /// @dev Like the SafeTransferLib Permit2 uses: any failure (a revert, or `false` returned)
    ///      becomes "TRANSFER_FROM_FAILED", whatever the token said; no return data counts as
    ///      success (tokens that return nothing, and, as there, an address without code).
    function _safeTransferFrom(address token, address from, address to, uint256 amount) private {
        (bool success, bytes memory data) =
            token.call(abi.encodeWithSelector(0x23b872dd, from, to, amount));
        require(
            success && (data.length == 0 || (data.length >= 32 && abi.decode(data, (uint256)) == 1)),
            "TRANSFER_FROM_FAILED"
        );
    }
}
