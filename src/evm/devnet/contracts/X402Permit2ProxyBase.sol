// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import {Permit2} from "./Permit2.sol";

/// @notice The EIP-2612 call the proxies make on the payer's token.
interface IERC2612 {
    function permit(
        address owner,
        address spender,
        uint256 value,
        uint256 deadline,
        uint8 v,
        bytes32 r,
        bytes32 s
    ) external;
}

/// @title X402Permit2ProxyBase
/// @notice What the x402 exact and upto Permit2 proxies share: the checks made before asking
///         Permit2 to move the money, the optional EIP-2612 approval of Permit2, a reentrancy
///         guard, and the events and errors of the x402 proxy ABI.
/// @dev    The proxies are the `spender` payers sign for, so Permit2 only lets them move the
///         money; they take the destination from the signed witness, so the caller cannot
///         redirect it. Placed with `anvil_setCode` (no constructor runs): Permit2's address is
///         a constant here, not set at deployment.
abstract contract X402Permit2ProxyBase {
    /// @notice The canonical Permit2 address, the same on every chain.
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;

    struct EIP2612Permit {
        uint256 value;
        uint256 deadline;
        bytes32 r;
        bytes32 s;
        uint8 v;
    }

    event Settled();
    event SettledWithPermit();

    error InvalidAmount();
    error InvalidDestination();
    error InvalidOwner();
    /// @dev Part of the x402 ABI (a deployment with a zero Permit2 address); never thrown here,
    ///      where the address is a constant.
    error InvalidPermit2Address();
    error PaymentTooEarly();
    error Permit2612AmountMismatch();
    error ReentrancyGuardReentrantCall();

    /// @dev Zero until a settlement is under way (storage starts zeroed: no constructor needed).
    uint256 private _entered;

    modifier nonReentrant() {
        if (_entered != 0) revert ReentrancyGuardReentrantCall();
        _entered = 1;
        _;
        _entered = 0;
    }

    /// @dev Check order as the x402 proxies: amount, owner, destination, validAfter; Permit2 then
    ///      checks the deadline, the amount against the permitted one, the nonce and the signature.
    function _settle(
        Permit2.PermitTransferFrom calldata permit,
        uint256 amount,
        address owner,
        address to,
        uint256 validAfter,
        bytes32 witnessHash,
        string memory witnessTypeString,
        bytes calldata signature
    ) internal {
        // A zero transfer would burn the payer's nonce for nothing.
        if (amount == 0) revert InvalidAmount();
        if (owner == address(0)) revert InvalidOwner();
        if (to == address(0)) revert InvalidDestination();
        // The upper bound of the window is Permit2's deadline.
        if (block.timestamp < validAfter) revert PaymentTooEarly();
        Permit2(PERMIT2).permitWitnessTransferFrom(
            permit,
            Permit2.SignatureTransferDetails({to: to, requestedAmount: amount}),
            owner,
            witnessHash,
            witnessTypeString,
            signature
        );
    }

    /// @dev Applies the payer's EIP-2612 approval of Permit2 on the token. A failing permit does
    ///      not revert, as in the x402 proxies: it may have been applied already (by anyone who
    ///      saw it: front-running it must not block the payment), or an approval may exist; if
    ///      neither, Permit2's transfer fails instead. The value must still be the permitted
    ///      amount, so a payer's permit cannot approve more than the payment it came with.
    function _applyPermit2612(
        address token,
        address owner,
        EIP2612Permit calldata permit2612,
        uint256 permittedAmount
    ) internal {
        if (permit2612.value != permittedAmount) revert Permit2612AmountMismatch();
        try IERC2612(token).permit(
            owner,
            PERMIT2,
            permit2612.value,
            permit2612.deadline,
            permit2612.v,
            permit2612.r,
            permit2612.s
        ) {} catch {}
    }
}
